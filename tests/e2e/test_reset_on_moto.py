"""A reset on AWS, on moto: approval_api's operator route (`deployed_app`, as the function serves
it) resets an execution of a deployed machine that moto's Step Functions ran with the real step
functions. The new execution replays the charge (a line in a file: not written again) and runs
notify afresh, on the deployed version and, once the machine is updated, on version 2; the link
is in the run database. Before the recorder has written the original's run records, the charge
replays its idempotency record in DynamoDB (moto); once it has (the real recorder, handed the
execution's status change as EventBridge would), the charge returns its recorded output without
being called, and its record says so. Refusals: a step or a version the deployed machine does
not have (404), a run no one can find (404)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from psycopg_pool import ConnectionPool

from switchyard.approvals.deployed import deployed_app
from switchyard.compile import compile_workflow
from switchyard.gates import GateStore
from switchyard.model import Workflow
from switchyard.stores.budget import DynamoDBBudgetLedger
from switchyard.validate import validate_file
from tests.e2e.test_examples_on_moto import (
    BUDGET_TABLE,
    REVIEWER,
    LambdaFunctions,
    _drive,
    conninfo,
    lambda_environment,
)
from tests.e2e.test_recorder_on_moto import recorder_handler, status_change
from tests.scenarios.harness.moto_runner import (
    REGION,
    create_machines,
    function_arns,
    moto_step_functions,
    substitute,
)

__all__ = ["conninfo"]
WORKFLOWS = Path(__file__).parent / "workflows" / "reset"
OPERATOR = {"X-Switchyard-User": "olga"}


def _workflow(version: int) -> Workflow:
    result = validate_file(WORKFLOWS / f"reset-ledger-v{version}.yaml")
    assert result.workflow is not None
    return result.workflow


def _done(sfn: Any, execution: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = dict(sfn.describe_execution(executionArn=execution))
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError(f"{execution} did not end")


def _deploy_version_2(sfn: Any, machine: str) -> None:
    values = function_arns()
    queue = boto3.client("sqs", region_name=REGION).get_queue_url(
        QueueName="switchyard-dead-letters"
    )
    values["${DeadLetterQueueUrl}"] = queue["QueueUrl"]
    definition = substitute(compile_workflow(_workflow(2)).text, values)
    sfn.update_state_machine(stateMachineArn=machine, definition=definition)


def test_approval_api_resets_a_deployed_run_replaying_its_dynamodb_records(
    conninfo: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("{}\n")  # no scripted answers: the tool itself runs
    ledger = tmp_path / "ledger.txt"
    functions = LambdaFunctions()
    with (
        moto_step_functions(functions) as sfn,
        lambda_environment(monkeypatch, conninfo, "reset-ledger", script),
        ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        machine = create_machines(sfn, [], _workflow(1))
        original = sfn.start_execution(
            stateMachineArn=machine,
            name="ledger-on-moto",
            input=json.dumps({"ledger": str(ledger)}),
        )["executionArn"]
        assert _done(sfn, original)["status"] == "SUCCEEDED"
        api = TestClient(deployed_app(pool, sfn, DynamoDBBudgetLedger(BUDGET_TABLE)))

        same = api.post(f"/runs/{original}/reset", json={"to": "notify"}, headers=OPERATOR)
        assert same.status_code == 201, same.text
        assert (same.json()["version"], same.json()["reused"]) == (1, ["charge"])
        again = same.json()["execution_arn"]
        assert _done(sfn, again)["status"] == "SUCCEEDED"

        _deploy_version_2(sfn, machine)
        record = recorder_handler(functions)
        record(status_change(sfn, original))  # the original's run records, as on AWS
        newer = api.post(
            f"/runs/{original}/reset", json={"to": "notify", "version": 2}, headers=OPERATOR
        )
        assert newer.status_code == 201, newer.text
        described = _done(sfn, newer.json()["execution_arn"])
        assert described["status"] == "SUCCEEDED"
        record(status_change(sfn, newer.json()["execution_arn"]))
        given = json.loads(sfn.describe_execution(executionArn=again)["input"])
        refusals = [
            api.post(f"/runs/{original}/reset", json={"to": "nope"}, headers=OPERATOR),
            api.post(
                f"/runs/{original}/reset", json={"to": "notify", "version": 7}, headers=OPERATOR
            ),
            api.post("/runs/ledger-on-moto/reset", json={"to": "notify"}, headers=OPERATOR),
        ]
        with pool.connection() as conn:
            links = conn.execute(
                "SELECT reset_from, to_step, version FROM run_resets ORDER BY created_at"
            ).fetchall()
            replayed = conn.execute(
                "SELECT t.step_id, t.replayed_from FROM task_runs t JOIN workflow_runs w"
                " ON w.execution_id = t.execution_id WHERE w.run_id = %s ORDER BY t.step_id",
                (newer.json()["run_id"],),
            ).fetchall()

    first, second = same.json()["run_id"], newer.json()["run_id"]
    assert ledger.read_text().splitlines() == [
        "charge ledger-on-moto",
        "notify v1 ledger-on-moto after charge line 1",
        f"notify v1 {first} after charge line 1",
        f"notify v2 {second} after charge line 1",
    ]  # the charge ran once: both resets replayed its record in DynamoDB
    assert json.loads(described["output"])["charged"] == "charge ledger-on-moto"
    assert given == {
        "ledger": str(ledger),
        "switchyard:reset": {"run": "ledger-on-moto", "to": "notify",
                             "reuse": {"charge": "ledger-on-moto"}},
    }  # fmt: skip
    assert [(r.status_code, r.json()["error"]["code"]) for r in refusals] == [
        (404, "step_not_found"),
        (404, "workflow_not_found"),
        (404, "run_not_found"),  # by id alone: a run on AWS that waits at no gate needs its ARN
    ]
    assert links == [("ledger-on-moto", "notify", 1), ("ledger-on-moto", "notify", 2)]
    assert replayed == [("charge", "ledger-on-moto"), ("notify", None)]


def test_a_deployed_reset_replays_an_agent_a_loop_and_a_gate_from_the_run_records(
    conninfo: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    functions = LambdaFunctions()
    script = WORKFLOWS / "reset-replay.script.yaml"
    with (
        moto_step_functions(functions) as sfn,
        lambda_environment(monkeypatch, conninfo, "reset-replay", script),
        ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        workflow = validate_file(WORKFLOWS / "reset-replay.yaml").workflow
        assert workflow is not None
        machine = create_machines(sfn, [], workflow)
        given = json.dumps({"ledger": str(ledger)})
        original = sfn.start_execution(stateMachineArn=machine, name="replay-on-moto",
                                       input=given)["executionArn"]  # fmt: skip
        described, decided = _drive(sfn, original, "replay-on-moto", GateStore(pool))
        assert described["status"] == "SUCCEEDED" and len(decided) == 1
        record = recorder_handler(functions)
        record(status_change(sfn, original))
        api = TestClient(deployed_app(pool, sfn, DynamoDBBudgetLedger(BUDGET_TABLE)))

        reset = api.post(f"/runs/{original}/reset", json={"to": "notify"}, headers=OPERATOR)
        assert reset.status_code == 201, reset.text
        again = reset.json()["execution_arn"]
        ended = _done(sfn, again)  # nobody decides: the gate replays its decision
        record(status_change(sfn, again))
        with pool.connection() as conn:
            rows = conn.execute(
                "SELECT t.step_id, max(t.replayed_from), sum(t.cost_usd) FROM task_runs t"
                " JOIN workflow_runs w ON w.execution_id = t.execution_id"
                " WHERE w.run_id = %s GROUP BY t.step_id ORDER BY t.step_id",
                (reset.json()["run_id"],),
            ).fetchall()
            opened = conn.execute(
                "SELECT count(*) FROM gates WHERE run_id = %s", (reset.json()["run_id"],)
            ).fetchone()

    assert ended["status"] == "SUCCEEDED", ended
    assert json.loads(ended["output"]) == {"triage": "urgent", "decided_by": REVIEWER,
                                           "polled": 2}  # fmt: skip
    assert [(step, replayed) for step, replayed, _ in rows] == [
        ("approve", "replay-on-moto"),
        ("look", "replay-on-moto"),
        ("notify", None),
        ("poll", "replay-on-moto"),
        ("triage", "replay-on-moto"),
    ]
    assert sum(cost for _, _, cost in rows) == 0  # no model was asked again
    assert opened == (0,)  # no gate opened, nobody was asked
    again_id = reset.json()["run_id"]
    assert [line.split()[0] for line in ledger.read_text().splitlines()] == [
        "look", "poll", "poll", "notify", "notify"
    ]  # fmt: skip
    assert ledger.read_text().splitlines()[-1] == f"notify {again_id}: urgent"
