"""The dashboard of deployed runs, live, on moto: `functions/dashboard_api/handler.py` (the real
function, given the HTTP API's events with the JWT authorizer's claims) polled while moto's Step
Functions runs the compiled machine, whose steps take a second or so each.

The recorder hears only of the run's start (its RUNNING status change, handed to the real
`functions/recorder/handler.py` as EventBridge would); every step that completes after that
reaches the page because the function catches the run up with its history when it is read
(`switchyard.records.catch_up`). A page polls once a second on AWS (`config.json`), so a step's
completion is on the page at most a period plus a read after it: measured here from the step
function returning its result to the poll that shows the step `completed` with its cost.

Large values: the last step's output is offloaded to S3 by the step runtime's own code
(`step_io.finish`, as on Lambda) and read back through `/blobs`, cut at the function's cap.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from botocore.exceptions import ClientError  # type: ignore[import-untyped]
from psycopg_pool import ConnectionPool

from switchyard.constants import DATABASE_URL_ENV, OUTPUT_BUCKET_ENV
from switchyard.contract import OUTPUT_REF_KEY, StepInvocation
from switchyard.dashboard.aws import BLOB_BYTES
from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.model import Workflow
from switchyard.records.catch_up import CatchUp
from switchyard.records.recorder import Recorder
from switchyard.runtime import wiring
from switchyard.runtime.large_outputs import S3OutputStore
from switchyard.runtime.services import StepServices
from switchyard.runtime.step_io import finish
from switchyard.source import load_document
from switchyard.validate import validate_document
from tests.e2e.test_recorder_on_moto import read_records, status_change
from tests.pg import fresh_database
from tests.scenarios.harness.moto_runner import REGION, create_machines, moto_step_functions
from tests.scenarios.harness.scripted import ScriptedFunctions
from tests.unit.dashboard.test_dashboard_api_handler import http_event
from tests.unit.gates.test_notify import handler_module

POLL_SECONDS = 1.0
"""How often an open page reads the run on AWS (`config.json`'s `everySeconds`)."""
LIVE_SECONDS = 2.0
"""The seed's bound: a step's completion on the page within 2 s."""
ASSERTED_SECONDS = 1.6
"""What the test holds the latency to: the bound, with a margin for a loaded machine."""
BUCKET = "switchyard-outputs"
BIG_TEXT_BYTES = 1_500_000
WORKFLOW = """
switchyard: 1
name: live-linear
version: 1
inputs: {topic: {type: string}}
defaults: {model: claude-haiku-4-5}
steps:
  research: {type: agent, prompt: "Research {{ inputs.topic }}"}
  draft: {type: agent, after: [research], prompt: "Draft from {{ steps.research.output.text }}"}
  publish: {type: agent, after: [draft], prompt: "Publish {{ steps.draft.output.text }}"}
"""
SCRIPT: dict[str, list[dict[str, Any]]] = {
    "research": [{"text": "owls hoot", "sleep": 1.2, "cost_usd": 0.0011}],
    "draft": [{"text": "A post about owls", "sleep": 1.5, "cost_usd": 0.0023}],
    "publish": [{"text": "x" * BIG_TEXT_BYTES, "sleep": 1.3, "cost_usd": 0.0037}],
}


def _workflow() -> Workflow:
    result = validate_document(load_document(WORKFLOW, file="live-linear.yaml"))
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return result.workflow


@dataclass
class TimedSteps(ScriptedFunctions):
    """The scripted step functions, each result's output offloaded as the step runtime does on
    Lambda (to S3, `step_io.finish`), and the moment each step returned its result."""

    store: S3OutputStore | None = None
    returned: dict[str, float] = field(default_factory=dict)

    def _step(self, invocation: StepInvocation) -> dict[str, Any]:
        result = super()._step(invocation)
        services = StepServices(output_store=self.store)
        result["output"] = finish(invocation, services, result["output"]).output
        self.returned[invocation.step_id] = time.monotonic()
        return result


def call(path: str, *, query: dict[str, Any] | None = None, claims: Any = ...) -> Any:
    """The dashboard function's answer to `GET path`: (status, body text, headers)."""
    kwargs = {} if claims is ... else {"claims": claims}
    event = http_event("GET", path, query=query, **kwargs)
    function = handler_module("dashboard_api")
    answer = function.handler(event, LambdaContext("dashboard_api", "arn:aws:lambda:::function:d"))
    body = answer.get("body") or ""
    if answer.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return answer["statusCode"], body, answer.get("headers", {})


def history_started(sfn: Any, execution: str) -> str:
    """`execution`, once its history shows its start (moto starts it on a thread of its own;
    on AWS the status change follows the start)."""
    deadline = time.monotonic() + 10
    while not sfn.get_execution_history(executionArn=execution, maxResults=1)["events"]:
        assert time.monotonic() < deadline, f"{execution} did not start"
        time.sleep(0.01)
    return execution


def record_status(sfn: Any, execution: str, status: str | None = None) -> None:
    """The status change EventBridge sends (the run's start, or its status now), handed to the
    real recorder."""
    recorder = handler_module("recorder")
    recorder._recorder.cache_clear()
    context = LambdaContext("recorder", f"arn:aws:lambda:{REGION}:123456789012:function:recorder")
    answer = recorder.handler(status_change(sfn, execution, status), context)
    assert answer["ignored"] is False, answer


@dataclass
class LiveRun:
    conninfo: str
    run_id: str
    latencies: dict[str, float]
    """Step -> seconds from its function returning to the poll showing it completed."""
    seen: dict[str, dict[str, Any]]
    """Step -> the step as the page's read showed it when first completed."""
    blob: tuple[int, str, dict[str, str]]
    blob_refusals: list[tuple[int, str]]
    reads: list[float]
    """Seconds each read of the run took (the catch-up included)."""


@contextmanager
def deployed_dashboard(steps: ScriptedFunctions) -> Iterator[tuple[Any, str]]:
    """moto's Step Functions running `steps`, and the dashboard function's environment over a
    fresh run database: (the stepfunctions client, the database)."""
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    with (
        pytest.MonkeyPatch.context() as env,
        fresh_database() as conninfo,
    ):
        env.setenv("AWS_DEFAULT_REGION", REGION)
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv(DATABASE_URL_ENV, conninfo)
        env.setenv(OUTPUT_BUCKET_ENV, BUCKET)
        env.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        with moto_step_functions(steps) as sfn:
            s3 = boto3.client("s3", region_name=REGION)
            s3.create_bucket(Bucket=BUCKET)
            if isinstance(steps, TimedSteps):
                steps.store = S3OutputStore(BUCKET, client=s3)
            wiring.database_pool.cache_clear()
            handler_module("dashboard_api")._adapter.cache_clear()
            try:
                yield sfn, conninfo
            finally:
                pool = wiring.database_pool()
                handler_module("dashboard_api")._adapter.cache_clear()
                wiring.database_pool.cache_clear()
                if pool is not None:
                    pool.close()


@pytest.fixture(scope="module")
def live_run() -> Iterator[LiveRun]:
    steps = TimedSteps(SCRIPT)
    with deployed_dashboard(steps) as (sfn, conninfo):
        yield _follow(sfn, steps, conninfo, "live-1")


def _follow(sfn: Any, steps: TimedSteps, conninfo: str, run_id: str) -> LiveRun:
    """Start the run, record its start, then read it as an open page does until it ends."""
    arn = create_machines(sfn, [], _workflow())
    execution = sfn.start_execution(
        stateMachineArn=arn, name=run_id, input=json.dumps({"topic": "owls"})
    )["executionArn"]
    record_status(sfn, history_started(sfn, execution), "RUNNING")
    latencies: dict[str, float] = {}
    seen: dict[str, dict[str, Any]] = {}
    reads: list[float] = []
    deadline = time.monotonic() + 60
    while len(seen) < len(SCRIPT):
        assert time.monotonic() < deadline, f"steps seen: {sorted(seen)}"
        started = time.monotonic()
        status, body, _ = call(f"/api/dashboard/runs/{run_id}")
        answered = time.monotonic()
        reads.append(answered - started)
        assert status == 200, body
        for step, found in json.loads(body)["steps"].items():
            if step not in seen and found["status"] == "completed" and found["cost_usd"] > 0:
                seen[step] = found
                latencies[step] = answered - steps.returned[step]
        time.sleep(max(0.0, POLL_SECONDS - (time.monotonic() - started)))
    while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
        time.sleep(0.05)
    record_status(sfn, execution)  # its end, as EventBridge sends it
    ref = seen["publish"]["output"]["text"][OUTPUT_REF_KEY]
    blob = call(f"/api/dashboard/runs/{run_id}/blobs", query={"key": ref["key"]})
    refusals = [
        call(f"/api/dashboard/runs/{run_id}/blobs", query={"key": f"{run_id}/publish/nothing"}),
        call(f"/api/dashboard/runs/{run_id}/blobs", query={"key": "other-run/publish/x.json"}),
        call(f"/api/dashboard/runs/{run_id}/blobs", query={"key": ref["key"]}, claims=None),
    ]
    return LiveRun(conninfo, run_id, latencies, seen, blob, [(s, b) for s, b, _ in refusals], reads)


@pytest.mark.slow
def test_a_step_that_completes_is_on_the_polled_page_within_2_s(live_run: LiveRun) -> None:
    """Every step, each completing while the run is RUNNING and the recorder hears nothing."""
    for step, seconds in sorted(live_run.latencies.items(), key=lambda item: item[1]):
        print(f"{step}: completed on the page {seconds * 1000:.0f} ms after its function returned")
    reads = sorted(live_run.reads)
    print(
        f"{len(reads)} reads, one per {POLL_SECONDS} s, each {reads[len(reads) // 2] * 1000:.0f} ms"
        f" (median; max {reads[-1] * 1000:.0f} ms), the catch-up included"
    )
    assert sorted(live_run.latencies) == sorted(SCRIPT)
    assert max(live_run.latencies.values()) < ASSERTED_SECONDS < LIVE_SECONDS
    for step, entry in SCRIPT.items():
        assert live_run.seen[step]["cost_usd"] == pytest.approx(entry[0]["cost_usd"])
        assert live_run.seen[step]["tokens"] == {"input": 10, "output": 5, "cache_read": 0}


@pytest.mark.slow
def test_the_caught_up_records_and_the_recorders_end_count_each_step_once(
    live_run: LiveRun,
) -> None:
    """The end's status change, recorded after the page caught the run up, adds only the end."""
    records = read_records(live_run.conninfo)
    run = records.runs[live_run.run_id]
    assert run["status"] == "succeeded"
    total = sum(entry[0]["cost_usd"] for entry in SCRIPT.values())
    assert float(run["cost_usd"]) == pytest.approx(total)
    assert run["tokens"] == (30, 15)
    assert {step: s["attempts"] for (_, step, _), s in records.steps.items()} == dict.fromkeys(
        SCRIPT, 1
    )


@pytest.mark.slow
def test_a_large_value_is_read_from_the_output_bucket_up_to_the_cap(live_run: LiveRun) -> None:
    status, body, headers = live_run.blob
    assert status == 200, body[:300]
    size = len(json.dumps("x" * BIG_TEXT_BYTES))
    assert headers["x-switchyard-bytes"] == str(size)
    assert body == json.dumps("x" * BIG_TEXT_BYTES)[:BLOB_BYTES]
    assert headers["cache-control"] == "no-store"
    (missing, missing_body), (other, other_body), (anonymous, _) = live_run.blob_refusals
    assert missing == 404 and json.loads(missing_body)["error"]["code"] == "blob_not_found"
    assert other == 404 and "is not a value of run" in json.loads(other_body)["error"]["message"]
    assert anonymous == 401


# --- the throttle: one history read per execution per interval ------------------------------------


class _Counting:
    """moto's client, counting the history reads: probes of the newest event, whole reads."""

    def __init__(self, sfn: Any) -> None:
        self._sfn = sfn
        self.probes = 0
        self.reads = 0
        self._lock = threading.Lock()

    def get_execution_history(self, **kwargs: Any) -> Any:
        with self._lock:
            if kwargs.get("reverseOrder"):
                self.probes += 1
            else:
                self.reads += 1
        return self._sfn.get_execution_history(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sfn, name)


@pytest.mark.slow
def test_many_pollers_read_the_history_at_most_once_per_interval() -> None:
    """Eight function environments (a catch-up each, over one database) reading one run as
    fast as they can for 2 s: Step Functions is asked at most once per 0.5 s, and the whole
    history read only when there is a new event (the step's end)."""
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    # RUNNING while the pollers poll; the step ends during the second second
    script = {"research": [{"text": "a", "sleep": 1.5}], "draft": [{"text": "b", "sleep": 3}]}
    with (
        fresh_database() as conninfo,
        moto_step_functions(ScriptedFunctions(script)) as sfn,
        ConnectionPool(conninfo, min_size=1, max_size=10, kwargs={"autocommit": True}) as pool,
    ):
        arn = create_machines(sfn, [], _workflow())
        execution = sfn.start_execution(
            stateMachineArn=arn, name="busy-1", input=json.dumps({"topic": "owls"})
        )["executionArn"]
        counting = _Counting(sfn)
        # the start, as the recorder records it
        Recorder(pool, counting).record(history_started(sfn, execution))
        counting.reads = 0
        readers = [CatchUp(pool, Recorder(pool, counting), counting) for _ in range(8)]
        outcomes: list[Any] = []
        seconds = 2.0

        def poll(reader: CatchUp) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                outcomes.extend(reader.run("busy-1"))
                time.sleep(0.01)

        threads = [threading.Thread(target=poll, args=(reader,)) for reader in readers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
            time.sleep(0.05)
    print(
        f"{len(outcomes)} catch-ups asked in {seconds} s: {counting.probes} probes of the newest"
        f" event, {counting.reads} whole history reads"
    )
    assert len(outcomes) > 50
    assert all(outcome.error is None for outcome in outcomes)
    assert 2 <= counting.probes <= seconds / 0.5 + 1
    assert sum(1 for outcome in outcomes if not outcome.skipped) == counting.probes
    assert counting.reads == sum(1 for outcome in outcomes if outcome.read) <= counting.probes


class _Throttled:
    """moto's client, whose history reads Step Functions throttles."""

    def __init__(self, sfn: Any) -> None:
        self._sfn = sfn

    def get_execution_history(self, **kwargs: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}},
            "GetExecutionHistory",
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sfn, name)


@pytest.mark.slow
def test_a_throttled_read_or_a_long_history_serves_the_records_as_they_are() -> None:
    """Throttled, or past the events a catch-up reads: the records stay as recorded; the next
    read that may catch up does."""
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    script = {"research": [{"text": "a", "sleep": 1}]}
    with (
        fresh_database() as conninfo,
        moto_step_functions(ScriptedFunctions(script)) as sfn,
        ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        arn = create_machines(sfn, [], _workflow())
        execution = sfn.start_execution(
            stateMachineArn=arn, name="slow-1", input=json.dumps({"topic": "owls"})
        )["executionArn"]
        Recorder(pool, sfn).record(history_started(sfn, execution))
        while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
            time.sleep(0.05)
        before = read_records(conninfo)
        (throttled,) = CatchUp(pool, Recorder(pool, sfn), _Throttled(sfn), interval=0).run("slow-1")
        assert throttled.error == "ThrottlingException" and throttled.events == 0
        assert read_records(conninfo) == before
        (too_long,) = CatchUp(pool, Recorder(pool, sfn), sfn, interval=0, max_events=3).run(
            "slow-1"
        )
        assert too_long.too_long and not too_long.read and read_records(conninfo) == before
        (caught_up,) = CatchUp(pool, Recorder(pool, sfn), sfn, interval=0).run("slow-1")
        assert caught_up.error is None and caught_up.events > 0
        assert read_records(conninfo).runs["slow-1"]["status"] == "failed"  # no publish script
        assert CatchUp(pool, Recorder(pool, sfn), _Throttled(sfn)).run("slow-1") == []  # it ended


GATED = """
switchyard: 1
name: live-gated
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  research: {type: agent, prompt: "Research owls"}
  approve: {type: human_gate, after: [research], assignee: lead, message: "Publish?"}
"""


@pytest.mark.slow
def test_the_runs_list_catches_up_open_runs_without_opening_their_pages() -> None:
    """A deployed run waiting at its gate, of which the recorder heard only the start: the runs
    list itself shows it `waiting` with the cost of the step before the gate."""
    steps = ScriptedFunctions({"research": [{"text": "owls hoot", "cost_usd": 0.0011}]})
    with deployed_dashboard(steps) as (sfn, _):
        result = validate_document(load_document(GATED, file="live-gated.yaml"))
        assert result.workflow is not None
        arn = create_machines(sfn, [], result.workflow)
        execution = sfn.start_execution(stateMachineArn=arn, name="gated-1")["executionArn"]
        record_status(sfn, history_started(sfn, execution), "RUNNING")
        deadline = time.monotonic() + 20
        while not steps.gates:
            assert time.monotonic() < deadline, "the gate did not open"
            time.sleep(0.05)
        status, body, _ = call("/api/dashboard/runs")
    assert status == 200, body
    [row] = [r for r in json.loads(body)["runs"] if r["run_id"] == "gated-1"]
    assert row["status"] == "waiting", row
    assert row["cost_usd"] == pytest.approx(0.0011)


PARENT = """
switchyard: 1
name: live-parent
version: 1
steps:
  review: {type: sub_workflow, workflow: live-gated@1}
"""


@pytest.mark.slow
def test_a_parent_page_catches_up_its_open_child_runs() -> None:
    """A deployed parent whose child waits at a gate, both recorded only at their start: the
    parent's page shows the child `waiting`, as the child's own page would."""
    slow = {"research": [{"text": "owls hoot", "cost_usd": 0.0011, "sleep": 1.0}]}
    steps = ScriptedFunctions(slow)  # the child's start is recorded before its gate opens
    with deployed_dashboard(steps) as (sfn, _):
        child = validate_document(load_document(GATED, file="live-gated.yaml")).workflow
        parent = validate_document(load_document(PARENT, file="live-parent.yaml")).workflow
        assert child is not None and parent is not None
        arn = create_machines(sfn, [child], parent)
        children = arn.replace("live-parent", "live-gated")

        def started() -> list[dict[str, Any]]:  # moto keeps other tests' executions
            found = sfn.list_executions(stateMachineArn=children)["executions"]
            return [e for e in found if e["name"] not in earlier]

        earlier = {e["name"] for e in sfn.list_executions(stateMachineArn=children)["executions"]}
        execution = sfn.start_execution(stateMachineArn=arn, name="parent-1")["executionArn"]
        record_status(sfn, history_started(sfn, execution), "RUNNING")
        deadline = time.monotonic() + 20
        while not started():
            assert time.monotonic() < deadline, "the child did not start"
            time.sleep(0.02)
        [child_run] = started()
        record_status(sfn, history_started(sfn, child_run["executionArn"]), "RUNNING")
        while not steps.gates:
            assert time.monotonic() < deadline, "the child's gate did not open"
            time.sleep(0.05)
        status, body, _ = call("/api/dashboard/runs/parent-1")
    assert status == 200, body
    [shown] = json.loads(body)["steps"]["review"]["children"]
    assert shown == {"run_id": child_run["name"], "status": "waiting"}
