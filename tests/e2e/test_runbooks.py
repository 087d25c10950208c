"""Every command of docs/runbooks.md, run as a person runs it: each ```` ```sh test ```` block in a
bash shell, against a local engine (with its REST API and Step Functions endpoint) prepared in the
state its section describes, and the AWS CLI against that endpoint and a moto server holding the
stack's alarms and queues. A command's exit code must be 0, or what its `# exits N` comment says;
after a block, the fix it made must show (a cancelled run, a started engine).

The `test:orphans` block runs last, after the engine has stopped: it starts one."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx
import psycopg
import pytest
import yaml
from moto.server import ThreadedMotoServer

from switchyard.api import rest_api_in_thread
from switchyard.local.stack import engine_process
from tests import held
from tests.conftest import FIXTURES, REPO
from tests.pg import fresh_database
from tests.unit.api.support import handler_environment, wait_for

RUNBOOK = REPO / "docs" / "runbooks.md"
OPERATIONS = FIXTURES / "operations"
E2E_WORKFLOWS = Path(__file__).parent / "workflows"
RATE_LIMIT = REPO / "tests" / "scenarios" / "cases" / "rate-limit-retried.yaml"
STACK = "Switchyard"
LOST_EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:Switchyard-backoff:run-7"
RECORDER_EVENT = {
    "version": "0",
    "source": "aws.states",
    "detail-type": "Step Functions Execution Status Change",
    "detail": {"executionArn": LOST_EXECUTION, "status": "SUCCEEDED"},
}
"""A status-change event the recorder could not record, as its dead-letter queue holds it."""
FINAL = {"succeeded", "failed", "cancelled", "timed_out"}

# --- the runbook's blocks -----------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    text: str
    exit_code: int
    line: int


@dataclass(frozen=True)
class Block:
    section: str
    """The slug of its `## ` heading, as the document's links name it."""
    marker: str
    line: int
    commands: tuple[Command, ...]


_EXITS = re.compile(r"#\s*exits (\d+)")


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).strip().replace(" ", "-")


def runbook_blocks(text: str) -> list[Block]:
    """Every ```` ```sh ```` block, with its section and its commands (continuation lines
    joined)."""
    blocks: list[Block] = []
    section = ""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("## "):
            section = slug(line[3:])
        if line.startswith("```sh"):
            start = index + 1
            body: list[tuple[int, str]] = []
            index += 1
            while not lines[index].startswith("```"):
                body.append((index + 1, lines[index]))
                index += 1
            blocks.append(Block(section, line[5:].strip(), start, tuple(_commands(body))))
        index += 1
    return blocks


def _commands(body: list[tuple[int, str]]) -> Iterator[Command]:
    text, first = "", 0
    for number, line in body:
        if not text:
            first = number
        if line.endswith("\\"):
            text += line[:-1] + " "
            continue
        text += line
        if text.strip() and not text.lstrip().startswith("#"):
            found = _EXITS.search(text)
            yield Command(text.strip(), int(found.group(1)) if found else 0, first)
        text = ""


BLOCKS = runbook_blocks(RUNBOOK.read_text())
SECTIONS = list(dict.fromkeys(b.section for b in BLOCKS if b.marker == "test"))


def test_every_command_block_is_tested_and_every_section_has_commands() -> None:
    assert BLOCKS, "no command blocks in docs/runbooks.md"
    assert {b.marker for b in BLOCKS} == {"test", "test:orphans"}
    headings = [slug(h) for h in re.findall(r"^## (.+)$", RUNBOOK.read_text(), re.MULTILINE)]
    assert set(headings) == set(SECTIONS) == set(PREPARE)
    for required in (
        "stuck-runs",
        "cycles",
        "retry-storms",
        "fan-out-contention",
        "concurrent-updates",
        "stuck-sub-workflows",
        "large-artifacts",
        "orphaned-runs",
        "provider-throttling",
    ):
        assert required in headings


# --- the bed: an engine, its APIs, moto ---------------------------------------------------------


@dataclass
class Bed:
    conninfo: str
    rest_url: str
    sfn_url: str
    env: dict[str, str]
    workflows: Path
    engine: ExitStack
    """The engine, its REST API and Step Functions endpoint, and the handlers' environment."""
    keys: list[str] = field(default_factory=list)
    running: bool = True

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.rest_url, timeout=30)

    def start(self, workflow: str, data: Any = None, *, script: bool = False) -> str:
        headers = {"X-Switchyard-LLM-Script": f"{workflow}.yaml"} if script else {}
        with self.client() as client:
            answer = client.post(f"/workflows/{workflow}/runs", json=data or {}, headers=headers)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["run_id"])

    def hold(self, workflow: str) -> tuple[str, str]:
        """A run of `workflow` whose `hold` call is being held: (run id, key)."""
        key = uuid.uuid4().hex[:12]
        self.keys.append(key)
        run_id = self.start(workflow, {"key": key})
        until(lambda: held.holding(key), f"the held call of {workflow}")
        return run_id, key

    def query(self, sql: str, *params: Any) -> Any:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            row = conn.execute(sql, params).fetchone()
        return row[0] if row else None

    def arn(self, run_id: str) -> str:
        return str(
            self.query(
                "SELECT e.arn FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id"
                " WHERE r.run_id = %s",
                run_id,
            )
        )

    def machine(self, workflow: str) -> str:
        return str(self.query("SELECT arn FROM sfn_state_machines WHERE name = %s", workflow))

    def status(self, run_id: str) -> str:
        return str(self.query("SELECT status FROM workflow_runs WHERE run_id = %s", run_id))

    def wait(self, run_id: str, statuses: set[str], timeout: float = 30) -> None:
        until(lambda: self.status(run_id) in statuses, f"{run_id} {statuses}", timeout)

    def stop(self) -> None:
        if self.running:
            self.running = False
            for key in self.keys:
                held.release(key)
            self.engine.close()


def until(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.05)


def _workflows(directory: Path) -> None:
    scripts = directory / "scripts"
    scripts.mkdir(parents=True)
    for path in OPERATIONS.glob("*.yaml"):
        shutil.copy(path, directory / path.name)
    for name in ("loop-detection.yaml", "large-output.yaml"):
        shutil.copy(E2E_WORKFLOWS / name, directory / name)
    for path in (E2E_WORKFLOWS / "reset").glob("refund-v*.yaml"):
        shutil.copy(path, directory / path.name)  # a bad version 1 and its fix
    scenario = yaml.safe_load(RATE_LIMIT.read_text())
    (directory / "rate-limit.yaml").write_text(yaml.safe_dump(scenario["workflow"]))
    (scripts / "rate-limit.yaml").write_text(yaml.safe_dump(scenario["script"]))
    large = {"write": [{"text": "Once " + "x" * 40_000, "output_tokens": 10_000}]}
    (scripts / "large-output.yaml").write_text(yaml.safe_dump(large))


AWS_SHIM = """#!/bin/sh
# AWS CLI v1 sends every `aws sqs` call to AWS's own host unless --endpoint-url is given (its
# overridesslcommonname customization ignores AWS_ENDPOINT_URL): give it moto's.
if [ "$1" = sqs ]; then exec "{aws}" --endpoint-url "$AWS_ENDPOINT_URL" "$@"; fi
exec "{aws}" "$@"
"""


def _environment(bed_home: Path, conninfo: str, rest: str, sfn: str, moto: str) -> dict[str, str]:
    aws_home = bed_home / "aws"
    aws_home.mkdir()
    shim = bed_home / "bin"
    shim.mkdir()
    (shim / "aws").write_text(AWS_SHIM.format(aws=Path(sys.executable).parent / "aws"))
    (shim / "aws").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SWITCHYARD_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    path = os.pathsep.join((str(shim), str(Path(sys.executable).parent), env.get("PATH", "")))
    return {
        **env,
        "PATH": path,
        "DATABASE_URL": conninfo,
        "SWITCHYARD_HOME": str(bed_home / "home"),
        "SWITCHYARD_STUCK_AFTER": "1",
        "SWITCHYARD_URL": rest,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(aws_home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(aws_home / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": moto,
        "AWS_ENDPOINT_URL_SFN": sfn,
        "AWS_PAGER": "",
    }


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """The database and moto for the module; the engine (its process, REST API and Step
    Functions endpoint) until `Bed.stop`."""
    root = tmp_path_factory.mktemp("runbooks")
    workflows = root / "workflows"
    _workflows(workflows)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    moto_url = f"http://{host}:{port}"
    _aws_state(moto_url)
    with fresh_database() as conninfo:
        engine = ExitStack()
        env: dict[str, str] = {}
        try:
            engine.enter_context(handler_environment(conninfo))
            process = engine_process(conninfo, sfn_port=0, workers=8)
            assert process.start()
            engine.callback(process.close)
            rest = engine.enter_context(rest_api_in_thread(process.engine, workflows_dir=workflows))
            assert process.sfn_url is not None
            env = _environment(root, conninfo, rest.url, process.sfn_url, moto_url)
            yield Bed(conninfo, rest.url, process.sfn_url, env, workflows, engine)
        finally:
            engine.close()
            if env:  # the engine `switchyard engine start` started, if a test did
                switchyard_cli(env, "engine", "stop")
            moto.stop()


def switchyard_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "switchyard.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _aws_state(moto_url: str) -> None:
    """What the stack would have: its alarms (named as the runbook names them, which
    tests/infra/test_synth.py checks against the synthesized stack), the queues, metrics."""
    options: dict[str, Any] = {
        "endpoint_url": moto_url,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    cloudwatch = boto3.client("cloudwatch", **options)
    names = set(re.findall(r"`(Switchyard-[a-z][a-z-]+)`", RUNBOOK.read_text()))
    for name in names:
        cloudwatch.put_metric_alarm(
            AlarmName=name,
            Namespace="switchyard",
            MetricName=name.removeprefix("Switchyard-"),
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        )
    cloudwatch.set_alarm_state(
        AlarmName=f"{STACK}-stuck-runs", StateValue="ALARM", StateReason="a step ran 612 s"
    )
    for metric, service in (
        ("RetryAttempts", "tool_step"),
        ("VersionConflicts", "tool_step"),
        ("RateLimitedAttempts", "agent_step"),
    ):
        cloudwatch.put_metric_data(
            Namespace="switchyard",
            MetricData=[
                {
                    "MetricName": metric,
                    "Dimensions": [
                        {"Name": "service", "Value": service},
                        {"Name": "workflow", "Value": "backoff"},
                    ],
                    "Value": 3,
                    "Unit": "Count",
                }
            ],
        )
    sqs = boto3.client("sqs", **options)
    for queue in (f"{STACK}-step-dead-letters", f"{STACK}-tickets"):
        url = sqs.create_queue(QueueName=queue)["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody='{"workflow": "backoff", "step": "call"}')
    url = sqs.create_queue(QueueName=f"{STACK}-recorder-dead-letters")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(RECORDER_EVENT))


# --- the sections -------------------------------------------------------------------------------

Prepared = tuple[dict[str, str], Callable[[Bed, dict[str, str], str], None]]
"""The section's variables, and what must hold after its blocks ran (given their output)."""


def _stuck_runs(bed: Bed) -> Prepared:
    run_id, _ = bed.hold("hold")
    other, _ = bed.hold("hold")
    time.sleep(1.3)

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert run_id in output and "task hold" in output
        assert bed.status(run_id) == "cancelled"
        assert bed.status(other) == "running"  # stopped, then redriven: it runs again

    return {
        "RUN_ID": run_id,
        "STATE_MACHINE_ARN": bed.machine("hold"),
        "EXECUTION_ARN": bed.arn(other),
    }, after


def _stuck_sub_workflows(bed: Bed) -> Prepared:
    parent, _ = bed.hold("nest")
    other, _ = bed.hold("nest")  # for the AWS commands
    child, other_child = (_child(bed, run_id) for run_id in (parent, other))
    time.sleep(1.3)

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert f"{parent} waits on sub-workflow run {child} (step child)" in output
        assert bed.status(child) == "cancelled"
        bed.wait(parent, FINAL)
        assert bed.status(parent) == "failed"
        assert bed.arn(other_child) in output and bed.arn(other) in output
        assert bed.status(other_child) == "cancelled"
        bed.wait(other, {"failed"})

    return {
        "PARENT_RUN_ID": parent,
        "CHILD_RUN_ID": child,
        "CHILD_STATE_MACHINE_ARN": bed.machine("hold"),
        "CHILD_EXECUTION_ARN": bed.arn(other_child),
    }, after


def _child(bed: Bed, run_id: str) -> str:
    return str(
        bed.query(
            "SELECT c.run_id FROM workflow_runs c JOIN workflow_runs p"
            " ON p.execution_id = c.parent_execution_id WHERE p.run_id = %s",
            run_id,
        )
    )


def _orphaned_runs(bed: Bed) -> Prepared:
    run_id = bed.start("pausing")  # its step fails for good: a dead letter, then a pause
    bed.wait(run_id, {"paused"})

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert "the downstream refused" in output  # the local dead letter's body
        assert '"step": "call"' in output  # the one on the queue
        assert LOST_EXECUTION in output  # the recorder's

    return {
        "DLQ_URL": _queue_url(bed, "step-dead-letters"),
        "RECORDER_DLQ_URL": _queue_url(bed, "recorder-dead-letters"),
    }, after


def _queue_url(bed: Bed, name: str) -> str:
    sqs = boto3.client(
        "sqs",
        endpoint_url=bed.env["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return str(sqs.get_queue_url(QueueName=f"{STACK}-{name}")["QueueUrl"])


def _cycles(bed: Bed) -> Prepared:
    run_id = bed.start("loop-detection")
    with bed.client() as client:
        wait_for(client, run_id, {"waiting"})

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert "a → b → c → a" in output
        assert "third" in output
        bed.wait(run_id, FINAL)
        assert bed.status(run_id) == "failed"
        assert '"status": "FAILED"' in output

    return {
        "WORKFLOW_FILE": str(FIXTURES / "invalid" / "cycle-three.yaml"),
        "RUN_ID": run_id,
        "STEP": "third",
        "EXECUTION_ARN": bed.arn(run_id),
    }, after


def _retry_storms(bed: Bed) -> Prepared:
    run_id = bed.start("backoff")
    until(
        lambda: bool(
            bed.query(
                "SELECT count(*) FROM sfn_timers m JOIN workflow_runs r"
                " ON r.execution_id = m.execution_id WHERE r.run_id = %s",
                run_id,
            )
        ),
        "the backoff's timer",
    )

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert re.search(r"backoff\s*\|\s*transient\s*\|\s*1", output), output
        assert "the downstream is down" in output and '"Sum": 3.0' in output
        assert bed.status(run_id) == "cancelled"

    return {"RUN_ID": run_id, "WORKFLOW": "backoff", "EXECUTION_ARN": bed.arn(run_id)}, after


def _fan_out_contention(bed: Bed) -> Prepared:
    run_id, _ = bed.hold("mixed")

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert run_id in output and f"{STACK}-step-throttles" in output
        assert bed.status(run_id) == "cancelled"

    return {"RUN_ID": run_id, "STATE_MACHINE_ARN": bed.machine("mixed")}, after


def _concurrent_updates(bed: Bed) -> Prepared:
    run_id = bed.start("gated")
    with bed.client() as client:
        wait_for(client, run_id, {"waiting"})

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert "engine running" in output and '"Sum": 3.0' in output
        bed.wait(run_id, {"succeeded"})

    return {"RUN_ID": run_id, "STEP": "approve", "WORKFLOW": "backoff"}, after


def _large_artifacts(bed: Bed) -> Prepared:
    run_id = bed.start("large-output", script=True)
    bed.wait(run_id, FINAL)
    assert bed.status(run_id) == "succeeded"

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert '"store": "postgres"' in output and "| 40007 |" in output
        assert '"SUCCEEDED"' in output

    return {"RUN_ID": run_id, "EXECUTION_ARN": bed.arn(run_id)}, after


def _provider_throttling(bed: Bed) -> Prepared:
    run_id = bed.start("rate-limit", script=True)
    bed.wait(run_id, FINAL)

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert '"attempts": 2' in output and '"Sum": 3.0' in output

    return {"RUN_ID": run_id, "WORKFLOW": "backoff"}, after


def _queue_backlog(bed: Bed) -> Prepared:
    sent = switchyard_cli(bed.env, "send", "tickets", '{"id": "T-1"}')
    assert sent.returncode == 0, sent.stderr

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert re.search(r"tickets\s*\|\s*1", output), output  # waiting: no engine reads it here
        assert "ApproximateNumberOfMessages" in output

    return {"QUEUE_URL": _queue_url(bed, "tickets")}, after


def _alarms(bed: Bed) -> Prepared:
    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert f"{STACK}-stuck-runs\tALARM" in output

    return {}, after


def _bad_version(bed: Bed) -> Prepared:
    ledger = bed.workflows.parent / f"refunds-{uuid.uuid4().hex[:6]}.txt"
    runs = []
    with bed.client() as client:
        for _ in range(2):
            started = client.post("/workflows/refund/runs?version=1", json={"ledger": str(ledger)})
            assert started.status_code == 201, started.text
            runs.append(str(started.json()["run_id"]))
    for run_id in runs:
        bed.wait(run_id, FINAL)
        assert bed.status(run_id) == "failed"  # at notify, after refunding

    def after(bed: Bed, env: dict[str, str], output: str) -> None:
        assert '"step":"notify"' in output and '"reused":["refund"]' in output
        resets = {
            run: bed.query("SELECT run_id FROM run_resets WHERE reset_from = %s", run)
            for run in runs
        }
        assert all(resets.values()), resets  # each run reset once
        assert bed.query("SELECT count(*) FROM run_resets WHERE reset_from = ANY(%s)", runs) == 2
        for new in resets.values():
            bed.wait(new, FINAL)
            assert bed.status(new) == "succeeded"
        lines = sorted(ledger.read_text().splitlines())
        assert lines == sorted(
            [*(f"refund {run}" for run in runs), *(f"told {new}" for new in resets.values())]
        )  # refunded once each, told once each by the fixed version

    return {"RUN_ID": runs[0]}, after


PREPARE: dict[str, Callable[[Bed], Prepared]] = {
    "the-alarms": _alarms,
    "stuck-runs": _stuck_runs,
    "stuck-sub-workflows": _stuck_sub_workflows,
    "orphaned-runs": _orphaned_runs,
    "cycles": _cycles,
    "retry-storms": _retry_storms,
    "fan-out-contention": _fan_out_contention,
    "concurrent-updates": _concurrent_updates,
    "large-artifacts": _large_artifacts,
    "provider-throttling": _provider_throttling,
    "queue-backlog": _queue_backlog,
    "bad-version-reset-in-flight-runs": _bad_version,
}


def run_block(block: Block, env: dict[str, str]) -> str:
    """Each command in bash (`pipefail`), its exit code checked; everything it printed."""
    printed = []
    for command in block.commands:
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command.text],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        where = f"docs/runbooks.md:{command.line}: {command.text}"
        assert done.returncode == command.exit_code, (
            f"{where}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
        printed.append(done.stdout + done.stderr)
    return "\n".join(printed)


@pytest.mark.slow
@pytest.mark.parametrize("section", SECTIONS)
def test_the_runbook_commands_run(bed: Bed, section: str) -> None:
    variables, check = PREPARE[section](bed)
    env = {**bed.env, **variables}
    output = "\n".join(
        run_block(block, env)
        for block in BLOCKS
        if block.section == section and block.marker == "test"
    )
    check(bed, env, output)


@pytest.mark.slow
def test_the_orphaned_runs_commands_start_an_engine(bed: Bed) -> None:
    key = uuid.uuid4().hex[:12]
    run_id = bed.start("flaky", {"key": key})
    until(
        lambda: (
            bed.query(
                "SELECT extract(epoch FROM m.fire_at) FROM sfn_timers m JOIN workflow_runs r"
                " ON r.execution_id = m.execution_id WHERE r.run_id = %s",
                run_id,
            )
            is not None
        ),
        "the retry's timer",
    )
    due = float(
        bed.query(
            "SELECT extract(epoch FROM m.fire_at) FROM sfn_timers m JOIN workflow_runs r"
            " ON r.execution_id = m.execution_id WHERE r.run_id = %s",
            run_id,
        )
    )
    bed.stop()  # the engine is gone: the run waits on a timer nothing fires
    time.sleep(max(0.0, due + 1.3 - time.time()))
    (block,) = [b for b in BLOCKS if b.marker == "test:orphans"]

    output = run_block(block, {**bed.env, "RUN_ID": run_id})

    assert "no engine is running" in output and run_id in output and "timer call" in output
    assert "engine running: pid" in output
    bed.wait(run_id, FINAL, timeout=60)
    assert bed.status(run_id) == "succeeded"
