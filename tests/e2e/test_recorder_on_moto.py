"""The recorder on moto: a deployed run's records equal the local engine's for the same workflow
and script.

Each example workflow runs twice with the real step functions (`functions/*/handler.py`) and
its model script: once on the local engine (which writes its run records as it goes), once on
moto's Step Functions interpreter with the functions behind Lambda, wired as the stack wires
them (DynamoDB, S3 on moto; the run database a fresh PostgreSQL database). moto sends no
EventBridge events, so the test builds each execution's "Step Functions Execution Status
Change" event from DescribeExecution, in the shape AWS sends it
(https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html), and hands it
to the real `functions/recorder/handler.py`, which reads the execution's history from moto and
writes the records. Then both databases' `workflow_runs` and `task_runs` are compared: status,
steps, attempts, tokens, cost, model, errors, outputs.

The scenario corpus (tests/scenarios/cases) runs the same way with its scripted step functions:
every construct the compiler emits, through both paths.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from aws_lambda_powertools import Metrics
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from switchyard.compile import compile_workflow
from switchyard.constants import (
    BUDGET_TABLE_ENV,
    DATABASE_URL_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LLM_SCRIPT_ENV,
    OUTPUT_BUCKET_ENV,
)
from switchyard.engine import machines as engine_machines
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry, LambdaContext
from switchyard.engine.engine import Engine
from switchyard.engine.substitution import local_values, substitute
from switchyard.gates import Decision, GateStore, decide
from switchyard.gates.callbacks import Boto3Callbacks
from switchyard.local.engine_client import EngineCommands
from switchyard.local.stack import local_engine
from switchyard.model import Workflow
from switchyard.records.recorder import HistoryBehindError, Recorder, handle_event
from switchyard.runtime import wiring
from tests.e2e.examples import CHILDREN, run_input, script_path
from tests.e2e.test_examples_on_moto import (
    FUNCTIONS_DIR,
    REVIEWER,
    LambdaFunctions,
    _workflow,
    lambda_environment,
)
from tests.pg import fresh_database
from tests.scenarios.harness.engine_runner import _drive as drive_engine_scenario
from tests.scenarios.harness.engine_runner import scripted_registry
from tests.scenarios.harness.moto_runner import (
    ACCOUNT,
    DEADLINE_SECONDS,
    REGION,
    create_machines,
    moto_step_functions,
)
from tests.scenarios.harness.moto_runner import _drive as drive_moto_scenario
from tests.scenarios.harness.scenario import Scenario, load_scenario
from tests.scenarios.harness.scripted import ScriptedFunctions

EXAMPLES = ("customer-support", "document-processing", "content-moderation")
CASES = sorted((Path(__file__).parents[1] / "scenarios" / "cases").glob("*.yaml"))
VOLATILE = frozenset({"decided_at", "started_at", "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"})
"""Keys of values that differ between any two runs: the wall-clock times of a decision and of a
run's start (in a child's input), and the parent execution's ARN (an engine's or moto's)."""
MOTO_DROPS_CAUSE = {
    "gate-rejected": "moto's SendTaskFailure keeps the error but not the cause",
    "on-error-pause-cancel": "moto's StopExecution keeps neither error nor cause",
    "max-duration-times-out": "moto's ExecutionTimedOut event has neither error nor cause",
}
"""Scenarios whose error messages moto's history does not carry (AWS's does): the errors' types
and steps are still compared."""
RECORDER = "recorder"


# --- the events AWS would send ------------------------------------------------------------------


def _epoch_ms(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def status_change(sfn: Any, execution_arn: str, status: str | None = None) -> dict[str, Any]:
    """The EventBridge event of the execution's status (now, or `status`), as Step Functions
    sends it: the execution's fields in `detail`, dates in epoch milliseconds, data as JSON
    text, and (since redrive exists) its redrive count."""
    described = sfn.describe_execution(executionArn=execution_arn)
    status = status or described["status"]
    ended = status != "RUNNING"
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Step Functions Execution Status Change",
        "source": "aws.states",
        "account": ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [execution_arn],
        "detail": {
            "executionArn": execution_arn,
            "stateMachineArn": described["stateMachineArn"],
            "name": described["name"],
            "status": status,
            "startDate": _epoch_ms(described["startDate"]),
            "stopDate": _epoch_ms(described.get("stopDate")) if ended else None,
            "input": described.get("input"),
            "inputDetails": {"included": True},
            "output": described.get("output") if ended else None,
            "outputDetails": {"included": True} if ended else None,
            "error": described.get("error") if ended else None,
            "cause": described.get("cause") if ended else None,
            "redriveCount": 0,
        },
    }


def all_executions(sfn: Any) -> list[dict[str, Any]]:
    found = []
    for machine in sfn.list_state_machines()["stateMachines"]:
        found += sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]
    return found


def deliver_in_order(sfn: Any, send: Callable[[dict[str, Any]], Any]) -> None:
    """Every execution's events as EventBridge would have sent them: each start in the order
    the executions started, then each end in the order they ended (children before parents)."""
    executions = all_executions(sfn)
    for execution in sorted(executions, key=lambda e: e["startDate"]):
        send(status_change(sfn, execution["executionArn"], "RUNNING"))
    for execution in sorted(executions, key=lambda e: e.get("stopDate") or e["startDate"]):
        send(status_change(sfn, execution["executionArn"]))


def recorder_handler(functions: LambdaFunctions) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """`functions/recorder/handler.py`, invoked as EventBridge invokes it, built afresh (it keeps
    its recorder per process, as on Lambda)."""
    module = sys.modules.get("switchyard_functions.recorder.handler")
    if module is not None:
        module._recorder.cache_clear()
    spec = functions.registry.resolve(RECORDER)
    assert spec is not None

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        context = LambdaContext(
            function_name=RECORDER,
            invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{RECORDER}",
            timeout_seconds=spec.timeout_seconds,
        )
        answer: dict[str, Any] = spec.handler(event, context)
        return answer

    return invoke


# --- the records, side by side ------------------------------------------------------------------


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


RUNS_SQL = """
SELECT r.*, p.run_id AS parent_run_id FROM workflow_runs r
  LEFT JOIN workflow_runs p ON p.execution_id = r.parent_execution_id
"""


@dataclass
class Records:
    runs: dict[str, dict[str, Any]]
    """By run id; a child run by `<workflow> of <parent run>.<step> #n` (its execution name is
    a hash of the time its parent's step started)."""
    steps: dict[tuple[str, str, str], dict[str, Any]]


def read_records(conninfo: str) -> Records:
    with psycopg.connect(conninfo, row_factory=dict_row) as conn:
        rows = conn.execute(RUNS_SQL).fetchall()
        names: dict[int, str] = {}
        for row in sorted(rows, key=lambda r: json.dumps(_stable(r["input"]), sort_keys=True)):
            if row["parent_run_id"] is None:
                names[row["execution_id"]] = row["run_id"]
            else:
                base = f"{row['workflow']} of {row['parent_run_id']}.{row['parent_step']}"
                count = sum(1 for name in names.values() if name.startswith(base))
                names[row["execution_id"]] = f"{base} #{count}"
        runs = {
            names[r["execution_id"]]: {
                "workflow": r["workflow"],
                "version": r["workflow_version"],
                "status": r["status"],
                "input": _stable(r["input"]),
                "output": _stable(r["output"]),
                "error": r["error"],
                "cost_usd": r["cost_usd"],
                "tokens": (r["input_tokens"], r["output_tokens"]),
                "parent_step": r["parent_step"],
                "timed": (r["started_at"] is not None, r["ended_at"] is not None),
            }
            for r in rows
        }
        steps = {
            (names[s["execution_id"]], s["step_id"], s["item"]): {
                "status": s["status"],
                "attempts": s["attempts"],
                "input": _stable(s["input"]),
                "output": _stable(s["output"]),
                "error": s["error"],
                "cost_usd": s["cost_usd"],
                "tokens": (s["input_tokens"], s["output_tokens"], s["cache_read_tokens"]),
                "model": (s["model"], s["provider"]),
                "timed": (s["started_at"] is not None, s["ended_at"] is not None),
                "in_order": s["started_at"] is None
                or s["ended_at"] is None
                or s["started_at"] <= s["ended_at"],
            }
            for s in conn.execute("SELECT * FROM task_runs").fetchall()
        }
    return Records(runs, steps)


def assert_same_records(engine: Records, deployed: Records) -> None:
    """Field by field, so that a difference says where it is."""
    assert sorted(deployed.runs) == sorted(engine.runs)
    for run, expected in engine.runs.items():
        assert deployed.runs[run] == expected, run
    assert sorted(deployed.steps) == sorted(engine.steps)
    for key, expected in engine.steps.items():
        assert deployed.steps[key] == expected, key


def snapshot(conninfo: str) -> list[Any]:
    """Every column of every run record, versions and update times included."""
    with psycopg.connect(conninfo) as conn:
        runs = conn.execute("SELECT * FROM workflow_runs ORDER BY execution_id").fetchall()
        steps = conn.execute(
            "SELECT * FROM task_runs ORDER BY execution_id, step_id, item"
        ).fetchall()
        executions = conn.execute(
            "SELECT id, version, next_event, status FROM sfn_executions ORDER BY id"
        ).fetchall()
    return [runs, steps, executions]


# --- the examples on the local engine -------------------------------------------------------------


def _clear_handler_caches() -> None:
    wiring.step_services.cache_clear()
    wiring.database_pool.cache_clear()
    notify = sys.modules.get("switchyard_functions.approval_notify.handler")
    if notify is not None:
        notify._store.cache_clear()


@contextmanager
def local_environment(
    monkeypatch: pytest.MonkeyPatch, conninfo: str, script: Path
) -> Iterator[None]:
    """The functions' environment as `switchyard dev` sets it: every store on PostgreSQL."""
    for name in (IDEMPOTENCY_TABLE_ENV, BUDGET_TABLE_ENV, OUTPUT_BUCKET_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(DATABASE_URL_ENV, conninfo)
    monkeypatch.setenv(LLM_SCRIPT_ENV, str(script))
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    _clear_handler_caches()
    pool = wiring.database_pool()
    try:
        yield
    finally:
        if pool is not None:
            pool.close()
        _clear_handler_caches()


def install(engine: Engine, workflows: list[Workflow]) -> str:
    """Create the machines (children first) in the engine; the last one's ARN."""
    known: list[tuple[str, str]] = []
    arn = ""
    with engine.read() as store:
        for workflow in workflows:
            text, missing = substitute(
                compile_workflow(workflow).text, local_values(engine.arns, known)
            )
            assert not missing, missing
            arn = str(
                engine_machines.create(store, engine.arns, name=workflow.name, definition=text)[
                    "stateMachineArn"
                ]
            )
            known.append((workflow.name, arn))
    return arn


def run_example_on_engine(example: str, run_id: str, conninfo: str) -> None:
    workflows = [_workflow(name) for name in (*CHILDREN.get(example, ()), example)]
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        local_environment(monkeypatch, conninfo, script_path(example)),
    ):
        engine = local_engine(conninfo, registry=FunctionRegistry(FUNCTIONS_DIR), workers=8)
        engine.start()
        try:
            arn = install(engine, workflows)
            started = engine.submit(StartExecution(arn, run_id, run_input(example)))
            execution = str(started["executionArn"])
            with ConnectionPool(conninfo, min_size=1, max_size=2) as pool:
                gates = GateStore(pool)
                deadline = time.monotonic() + DEADLINE_SECONDS
                while engine.wait(execution, timeout=0.05) == "RUNNING":
                    assert time.monotonic() < deadline, f"{execution} did not finish"
                    for gate in gates.open_for(run_id):
                        decide(gate, _approval(), store=gates, callbacks=EngineCommands(engine))
        finally:
            engine.close()


def _approval() -> Decision:
    return Decision("approve", REVIEWER, note="checked against the ticket")


# --- the examples on moto, recorded -------------------------------------------------------------


@dataclass
class DeployedRun:
    execution_arn: str
    waiting: Records
    """The records the recorder wrote when the run was at its first gate (the RUNNING event
    delivered then), or empty when the run had none."""
    deliveries: list[dict[str, Any]]
    """Every event delivered, in order, and what the recorder answered."""


def run_example_on_moto(
    example: str, run_id: str, conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> DeployedRun:
    functions = LambdaFunctions()
    children = [_workflow(name) for name in CHILDREN.get(example, ())]
    deliveries: list[dict[str, Any]] = []
    with (
        moto_step_functions(functions) as sfn,
        lambda_environment(monkeypatch, conninfo, example),
        ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        recorder = recorder_handler(functions)

        def send(event: dict[str, Any]) -> None:
            deliveries.append({"event": event, "recorded": recorder(event)})

        arn = create_machines(sfn, children, _workflow(example))
        execution = sfn.start_execution(
            stateMachineArn=arn, name=run_id, input=json.dumps(run_input(example))
        )["executionArn"]
        gates = GateStore(pool)
        waiting = Records({}, {})
        deadline = time.monotonic() + DEADLINE_SECONDS
        while sfn.describe_execution(executionArn=execution)["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{execution} did not finish"
            for gate in gates.open_for(run_id):
                if not waiting.runs:  # the run is at its gate: record it as it is now
                    send(status_change(sfn, execution))
                    waiting = read_records(conninfo)
                decide(gate, _approval(), store=gates, callbacks=Boto3Callbacks(sfn))
            time.sleep(0.02)
        deliver_in_order(sfn, send)
    return DeployedRun(execution, waiting, deliveries)


@pytest.fixture(scope="module")
def examples() -> Iterator[dict[str, tuple[str, str, DeployedRun]]]:
    """Each example on the engine and on moto, each in a database of its own."""
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    done: dict[str, tuple[str, str, DeployedRun]] = {}
    with pytest.MonkeyPatch.context() as monkeypatch, _databases(2 * len(EXAMPLES)) as found:
        for index, example in enumerate(EXAMPLES):
            local, deployed = found[2 * index], found[2 * index + 1]
            run_id = f"{example}-recorded"
            run_example_on_engine(example, run_id, local)
            run = run_example_on_moto(example, run_id, deployed, monkeypatch)
            done[example] = (local, deployed, run)
        yield done


@contextmanager
def _databases(count: int) -> Iterator[list[str]]:
    if count == 0:
        yield []
        return
    with fresh_database() as first, _databases(count - 1) as rest:
        yield [first, *rest]


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_a_deployed_runs_records_equal_the_local_engines(
    example: str, examples: dict[str, tuple[str, str, DeployedRun]]
) -> None:
    local, deployed, _ = examples[example]
    engine, recorded = read_records(local), read_records(deployed)
    assert engine.runs[f"{example}-recorded"]["status"] == "succeeded"
    assert engine.runs[f"{example}-recorded"]["cost_usd"] > 0
    assert_same_records(engine, recorded)
    assert all(step["in_order"] for step in recorded.steps.values())


@pytest.mark.slow
def test_a_run_at_its_gate_is_recorded_waiting_with_the_steps_done_so_far(
    examples: dict[str, tuple[str, str, DeployedRun]],
) -> None:
    """customer-support's RUNNING event, delivered while the run waits for its approval."""
    _, _, run = examples["customer-support"]
    at_gate = run.waiting
    (record,) = at_gate.runs.values()
    assert record["status"] == "waiting"
    steps = {step: found["status"] for (_, step, _), found in at_gate.steps.items()}
    assert steps["approve"] == "waiting"
    assert steps["classify"] == "completed" and steps["draft"] == "completed"
    assert "send" not in steps
    assert record["cost_usd"] == sum(s["cost_usd"] for s in at_gate.steps.values()) > 0


@pytest.mark.slow
def test_a_child_run_is_recorded_under_its_parent_and_its_spend_counts_there(
    examples: dict[str, tuple[str, str, DeployedRun]],
) -> None:
    _, deployed, _ = examples["document-processing"]
    records = read_records(deployed)
    children = [r for name, r in records.runs.items() if " of " in name]
    assert len(children) == 3 and all(c["parent_step"] == "summarize_each" for c in children)
    parent = records.runs["document-processing-recorded"]
    own = sum(
        s["cost_usd"]
        for (run, step, item), s in records.steps.items()
        if run == "document-processing-recorded" and step != "summarize_each"
    )
    assert parent["cost_usd"] == own + sum(c["cost_usd"] for c in children)


# --- idempotent per event, ordered by version ---------------------------------------------------


@pytest.mark.slow
def test_the_same_event_twice_records_nothing_the_second_time(
    examples: dict[str, tuple[str, str, DeployedRun]],
) -> None:
    _, deployed, run = examples["customer-support"]
    last = run.deliveries[-1]
    assert last["event"]["detail"]["status"] == "SUCCEEDED"
    before = snapshot(deployed)
    again = redeliver(deployed, last["event"])
    assert again["events"] == 0 and again["status"] == "SUCCEEDED"
    assert snapshot(deployed) == before


@pytest.mark.slow
def test_an_older_event_after_a_newer_one_changes_nothing(
    examples: dict[str, tuple[str, str, DeployedRun]],
) -> None:
    _, deployed, run = examples["content-moderation"]
    started = next(d for d in run.deliveries if d["event"]["detail"]["status"] == "RUNNING")
    before = snapshot(deployed)
    late = redeliver(deployed, started["event"])
    assert late["events"] == 0 and late["status"] == "SUCCEEDED"
    assert snapshot(deployed) == before
    assert read_records(deployed).runs["content-moderation-recorded"]["status"] == "succeeded"


def redeliver(conninfo: str, event: dict[str, Any]) -> dict[str, Any]:
    """One more delivery of `event`, to a recorder over the run's database. The history is
    already projected, so the recorder must not need to read it again for an event it has
    seen; moto is gone, so any call to Step Functions would fail."""
    with ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
        return _answer(Recorder(pool, _NoStepFunctions()), event)


class _NoStepFunctions:
    """A Step Functions client for a recorder that must not call Step Functions."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the recorder called Step Functions' {name}")


def _answer(recorder: Recorder, event: dict[str, Any]) -> dict[str, Any]:
    from switchyard.records.recorder import handle_event

    return handle_event(event, recorder)


# --- the scenario corpus ------------------------------------------------------------------------


def _engine_scenario(scenario: Scenario, conninfo: str, run_id: str) -> None:
    from tests.scenarios.harness.engine_runner import install as install_scenario

    functions = ScriptedFunctions(scenario.script)
    engine = local_engine(conninfo, registry=scripted_registry(functions))
    engine.start()
    try:
        arn = install_scenario(engine, scenario, prefix="local")
        started = engine.submit(StartExecution(arn, run_id, scenario.input))
        drive_engine_scenario(engine, str(started["executionArn"]), functions, scenario)
    finally:
        engine.close()


@contextmanager
def scenario_on_moto(scenario: Scenario, run_id: str) -> Iterator[tuple[Any, str]]:
    """The scenario run to its end on moto; (the client, the execution's ARN) while moto lives."""
    functions = ScriptedFunctions(scenario.script)
    with moto_step_functions(functions) as sfn:
        arn = create_machines(sfn, scenario.children, scenario.workflow)
        execution = sfn.start_execution(
            stateMachineArn=arn, name=run_id, input=json.dumps(scenario.input)
        )["executionArn"]
        drive_moto_scenario(sfn, execution, functions, scenario)
        yield sfn, execution


def _without_messages(records: Records) -> Records:
    """The records with every error's message replaced (the type and step stay)."""
    for record in (*records.runs.values(), *records.steps.values()):
        if isinstance(record["error"], dict):
            record["error"] = {**record["error"], "message": "(moto drops it)"}
    return records


@pytest.mark.slow
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_scenarios_deployed_records_equal_the_engines(path: Path) -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    scenario = load_scenario(path)
    with fresh_database() as local, fresh_database() as deployed:
        _engine_scenario(scenario, local, "run-1")
        with (
            scenario_on_moto(scenario, "run-1") as (sfn, _),
            ConnectionPool(deployed, min_size=1, max_size=4, kwargs={"autocommit": True}) as pool,
        ):
            recorder = Recorder(pool, sfn)
            deliver_in_order(sfn, lambda event: _answer(recorder, event))
        engine, recorded = read_records(local), read_records(deployed)
    if path.stem in MOTO_DROPS_CAUSE:
        engine, recorded = _without_messages(engine), _without_messages(recorded)
    assert engine.runs, "the engine recorded no run"
    assert_same_records(engine, recorded)


# --- a history that lags, recorders that race -----------------------------------------------------


class _Lagging:
    """moto's client, with a history that does not show its last `behind` events yet (as
    Step Functions' history may trail the status event by a moment)."""

    def __init__(self, sfn: Any, behind: int) -> None:
        self._sfn = sfn
        self.behind = behind

    def get_execution_history(self, **kwargs: Any) -> dict[str, Any]:
        page = dict(self._sfn.get_execution_history(**kwargs))
        page["events"] = page["events"][: len(page["events"]) - self.behind]
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sfn, name)


class _Racing:
    """moto's client, whose first history read lets another recorder record the execution
    first (between this recorder's reading of the row and its commit)."""

    def __init__(self, sfn: Any, other: Callable[[], Any]) -> None:
        self._sfn = sfn
        self._other: Callable[[], Any] | None = other

    def get_execution_history(self, **kwargs: Any) -> Any:
        other, self._other = self._other, None
        if other is not None:
            other()
        return self._sfn.get_execution_history(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sfn, name)


@pytest.mark.slow
def test_an_end_the_history_does_not_show_yet_is_refused_then_recorded() -> None:
    scenario = load_scenario(CASES[0].parent / "linear-happy-path.yaml")
    waits: list[float] = []
    with (
        fresh_database() as deployed,
        scenario_on_moto(scenario, "run-1") as (sfn, execution),
        ConnectionPool(deployed, min_size=1, max_size=4, kwargs={"autocommit": True}) as pool,
    ):
        ended = status_change(sfn, execution)
        lagging = Recorder(pool, _Lagging(sfn, behind=2), attempts=3, wait=waits.append)
        with pytest.raises(HistoryBehindError, match="deliver the event again"):
            _answer(lagging, ended)
        assert waits == [1.0, 1.0]
        assert read_records(deployed).runs["run-1"]["status"] == "running"
        answer = _answer(Recorder(pool, sfn), ended)  # delivered again: the history caught up
        assert answer["status"] == "SUCCEEDED" and answer["events"] == 2
        assert read_records(deployed).runs["run-1"]["status"] == "succeeded"


@pytest.mark.slow
def test_two_recorders_of_one_execution_at_once_project_each_event_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one that lost the race read again, counted as a version conflict (EMF)."""
    scenario = load_scenario(CASES[0].parent / "retry-then-succeed.yaml")
    with fresh_database() as local, fresh_database() as deployed:
        _engine_scenario(scenario, local, "run-1")
        with (
            scenario_on_moto(scenario, "run-1") as (sfn, execution),
            ConnectionPool(deployed, min_size=1, max_size=4, kwargs={"autocommit": True}) as pool,
        ):
            ended = status_change(sfn, execution)
            first = Recorder(pool, sfn)
            won: list[dict[str, Any]] = []
            second = Recorder(pool, _Racing(sfn, lambda: won.append(_answer(first, ended))))
            metrics = Metrics(namespace="switchyard", service="recorder")
            with monkeypatch.context() as patch:
                patch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
                capsys.readouterr()
                raced = handle_event(ended, second, metrics=metrics)
                emitted = capsys.readouterr().out
            assert raced["events"] == 0  # the other one went first; this one read again
            assert raced["conflicts"] == 1 and won[0]["conflicts"] == 0
            assert raced["workflow"] == scenario.workflow.name
            (record,) = [json.loads(line) for line in emitted.splitlines() if '"_aws"' in line]
            assert record["VersionConflicts"] == [1.0]
            assert (record["service"], record["workflow"]) == ("recorder", raced["workflow"])
        assert_same_records(read_records(local), read_records(deployed))


def test_an_event_that_is_not_an_execution_status_change_is_ignored() -> None:
    with (
        fresh_database() as deployed,
        ConnectionPool(deployed, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        recorder = Recorder(pool, _NoStepFunctions())
        for event in (
            {},
            {"source": "aws.states", "detail-type": "Step Functions Execution Status Change"},
            {"source": "aws.s3", "detail-type": "Object Created", "detail": {}},
            {
                "source": "aws.states",
                "detail-type": "Step Functions Execution Status Change",
                "detail": {
                    "executionArn": "not-an-arn",
                    "stateMachineArn": "x",
                    "name": "x",
                    "status": "RUNNING",
                },
            },
            "<script>alert(1)</script>",
        ):
            answer = _answer(recorder, event)
            assert answer["ignored"] is True
            assert "not an execution status change" in answer["reason"]
        assert snapshot(deployed) == [[], [], []]


def test_an_execution_switchyard_did_not_compile_or_that_is_gone_is_not_recorded() -> None:
    plain = {"StartAt": "done", "States": {"done": {"Type": "Succeed"}}}
    with (
        fresh_database() as deployed,
        moto_step_functions(ScriptedFunctions({})) as sfn,
        ConnectionPool(deployed, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        arn = sfn.create_state_machine(
            name="plain", definition=json.dumps(plain), roleArn=f"arn:aws:iam::{ACCOUNT}:role/x"
        )["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=arn, name="run-1", input="{}")[
            "executionArn"
        ]
        event = status_change(sfn, execution)
        assert _answer(Recorder(pool, sfn), event)["ignored"] is True
        gone = {**event, "detail": {**event["detail"], "executionArn": f"{execution}-gone"}}
        assert _answer(Recorder(pool, sfn), gone)["ignored"] is True  # ExecutionDoesNotExist
        assert snapshot(deployed) == [[], [], []]
