"""Runs over HTTP: start, follow to the human gate, approve, succeed; idempotency keys; input
errors; listing; cancel."""

from __future__ import annotations

import json

import httpx
import pytest

from switchyard.constants import ROLES_ENV
from switchyard.engine.commands import StartExecution
from tests.unit.api.support import CUSTOMER_SUPPORT_INPUT, Stack, start, unique, wait_for


def test_a_run_started_over_http_waits_at_its_gate_and_succeeds_once_approved(
    stack: Stack, client: httpx.Client
) -> None:
    started = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT)

    assert started.status_code == 201, started.text
    body = started.json()
    run_id = body["run_id"]
    assert body == {
        "run_id": run_id,
        "workflow": "customer-support",
        "version": 1,
        "status": "running",
        "links": {"self": f"/runs/{run_id}"},
    }
    assert started.headers["Location"] == f"/runs/{run_id}"

    waiting = wait_for(client, run_id, {"waiting"})
    (gate,) = waiting["waiting_for"]
    assert gate["step"] == "approve" and gate["assignee"] == "support_lead"
    assert waiting["steps"]["draft"]["status"] == "completed"

    approved = client.post(
        f"/runs/{run_id}/steps/approve/approve",
        json={"note": "looks right", "edits": {"draft": "Hi Dana, refunded."}},
        headers={"X-Switchyard-User": "lead@example.com"},
    )
    assert approved.status_code == 200, approved.text
    assert approved.json() == {
        "run_id": run_id,
        "step": "approve",
        "decision": "approved",
        "reviewer": "lead@example.com",
        "note": "looks right",
        "links": {"run": f"/runs/{run_id}"},
    }

    done = wait_for(client, run_id, {"succeeded"})
    assert done["output"] == {"send": {"message_id": "local-0001"}}
    assert done["waiting_for"] == []
    assert done["steps"]["approve"]["output"]["edits"] == {"draft": "Hi Dana, refunded."}
    assert done["steps"]["send"]["status"] == "completed"
    assert done["tokens"]["input"] == 212 + 1840 + 980
    assert set(done) >= {"run_id", "workflow", "version", "status", "output", "error"}
    assert set(done) >= {"cost_usd", "tokens", "steps", "waiting_for"}


def test_the_same_idempotency_key_and_body_answer_the_same_run(
    stack: Stack, client: httpx.Client
) -> None:
    key = unique("order")
    first = start(client, stack, "noop", {"n": 1}, key=key)
    again = start(client, stack, "noop", {"n": 1}, key=key)

    assert first.status_code == 201 and again.status_code == 200, again.text
    assert first.json()["run_id"] == again.json()["run_id"] == key
    wait_for(client, key, {"succeeded"})
    after_the_end = start(client, stack, "noop", {"n": 1}, key=key)
    assert after_the_end.status_code == 200
    assert after_the_end.json()["status"] == "succeeded"
    listed = client.get("/runs", params={"workflow": "noop", "limit": 500}).json()["runs"]
    assert [run["run_id"] for run in listed].count(key) == 1


def test_defaults_count_as_the_same_body_under_a_key(stack: Stack, client: httpx.Client) -> None:
    key = unique("defaults")
    assert start(client, stack, "noop", {}, key=key).status_code == 201
    assert start(client, stack, "noop", {"n": 0}, key=key).status_code == 200


def test_another_body_or_workflow_under_a_used_key_is_409(
    stack: Stack, client: httpx.Client
) -> None:
    key = unique("order")
    assert start(client, stack, "noop", {"n": 1}, key=key).status_code == 201

    other_body = start(client, stack, "noop", {"n": 2}, key=key)
    other_workflow = start(client, stack, "pause", {}, key=key)

    assert other_body.status_code == 409
    assert other_body.json()["error"]["code"] == "idempotency_conflict"
    assert "another body" in other_body.json()["error"]["message"]
    assert other_workflow.status_code == 409
    assert "workflow noop" in other_workflow.json()["error"]["message"]


def test_an_idempotency_key_that_cannot_be_a_run_id_is_400(
    stack: Stack, client: httpx.Client
) -> None:
    answer = start(client, stack, "noop", {}, key="has spaces/and slashes")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "bad_idempotency_key"


def test_invalid_input_is_400_naming_every_problem(stack: Stack, client: httpx.Client) -> None:
    answer = start(
        client, stack, "customer-support", {"ticket_id": 7, "body": "hi", "colour": "red"}
    )

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_input"
    assert "inputs.ticket_id" in error["message"]
    assert "'customer_email' is required" in error["message"]
    assert "'colour' is not an input" in error["message"]
    assert len(error["problems"]) == 3


def test_an_input_that_is_not_an_object_is_400(stack: Stack, client: httpx.Client) -> None:
    answer = start(client, stack, "noop", [1, 2])
    assert answer.status_code == 400
    assert "must be a JSON object" in answer.json()["error"]["message"]


def test_agent_steps_without_a_script_or_credentials_are_refused(
    stack: Stack, client: httpx.Client
) -> None:
    answer = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT, script=False)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "no_model"
    assert "X-Switchyard-LLM-Script" in answer.json()["error"]["message"]


def test_a_model_script_that_cannot_be_read_is_400(stack: Stack, client: httpx.Client) -> None:
    answer = client.post(
        "/workflows/noop/runs",
        json={},
        headers={"X-Switchyard-LLM-Script": str(stack.scripts / "missing.yaml")},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "bad_llm_script"


def test_an_unknown_workflow_or_run_is_404(client: httpx.Client) -> None:
    unknown_workflow = client.post("/workflows/nope/runs", json={})
    unknown_version = client.post("/workflows/noop/runs?version=9", json={})
    unknown_run = client.get("/runs/no-such-run")

    assert unknown_workflow.status_code == 404
    assert unknown_workflow.json()["error"]["code"] == "workflow_not_found"
    assert "customer-support" in unknown_workflow.json()["error"]["message"]
    assert unknown_version.status_code == 404
    assert unknown_run.status_code == 404
    assert unknown_run.json()["error"]["code"] == "run_not_found"


def test_runs_are_listed_newest_first_by_status_and_workflow(
    stack: Stack, client: httpx.Client
) -> None:
    first = start(client, stack, "noop", {"n": 10}).json()["run_id"]
    second = start(client, stack, "noop", {"n": 11}).json()["run_id"]
    wait_for(client, second, {"succeeded"})
    wait_for(client, first, {"succeeded"})

    runs = client.get("/runs", params={"workflow": "noop", "status": "succeeded"}).json()["runs"]
    ids = [run["run_id"] for run in runs]
    assert ids.index(second) < ids.index(first)
    assert all(run["workflow"] == "noop" and run["status"] == "succeeded" for run in runs)
    assert runs[0]["links"] == {"self": f"/runs/{runs[0]['run_id']}"}
    assert len(client.get("/runs", params={"limit": 1}).json()["runs"]) == 1


def test_bad_list_parameters_are_400(client: httpx.Client) -> None:
    for params in ({"status": "done"}, {"limit": "0"}, {"limit": "many"}, {"state": "x"}):
        answer = client.get("/runs", params=params)
        assert answer.status_code == 400, params
        assert answer.json()["error"]["code"] == "bad_request"


def test_a_rejected_gate_fails_the_run(stack: Stack, client: httpx.Client) -> None:
    run_id = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT).json()["run_id"]
    wait_for(client, run_id, {"waiting"})

    rejected = client.post(
        f"/runs/{run_id}/steps/approve/reject",
        json={"note": "wrong tone"},
        headers={"X-Switchyard-User": "lead@example.com"},
    )

    assert rejected.status_code == 200, rejected.text
    assert rejected.json()["decision"] == "rejected"
    failed = wait_for(client, run_id, {"failed"})
    assert failed["error"]["type"] == "rejected" and failed["error"]["step"] == "approve"
    assert "send" not in failed["steps"] or failed["steps"]["send"]["status"] != "completed"


def test_with_an_operators_role_only_an_operator_cancels(
    stack: Stack, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROLES_ENV, json.dumps({"operators": ["ops@example.com"]}))
    run_id = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT).json()["run_id"]
    wait_for(client, run_id, {"waiting"})

    anonymous = client.post(f"/runs/{run_id}/cancel")
    outsider = client.post(f"/runs/{run_id}/cancel", headers={"X-Switchyard-User": "intern"})

    assert anonymous.status_code == 403
    assert anonymous.json()["error"]["message"] == (
        "say who cancels (the X-Switchyard-User header): only operators may"
    )
    assert outsider.status_code == 403
    assert outsider.json()["error"]["message"] == (
        "intern may not decide for operators (SWITCHYARD_ROLES lists who may; ask one of them)"
    )
    assert client.get(f"/runs/{run_id}").json()["status"] == "waiting"
    operator = client.post(
        f"/runs/{run_id}/cancel", headers={"X-Switchyard-User": "ops@example.com"}
    )
    assert operator.status_code == 200 and operator.json()["status"] == "cancelled"


def test_a_waiting_run_is_cancelled_and_its_gate_closed(stack: Stack, client: httpx.Client) -> None:
    run_id = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT).json()["run_id"]
    wait_for(client, run_id, {"waiting"})

    cancelled = client.post(
        f"/runs/{run_id}/cancel",
        json={"note": "duplicate ticket"},
        headers={"X-Switchyard-User": "ops@example.com"},
    )

    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    run = client.get(f"/runs/{run_id}").json()
    assert run["status"] == "cancelled" and run["waiting_for"] == []
    assert run["error"]["type"] == "cancelled"
    waiting = run["steps"]["approve"]  # the step the run was waiting at ends with the run
    assert waiting["status"] == "failed" and waiting["error"]["type"] == "cancelled"
    late = client.post(
        f"/runs/{run_id}/steps/approve/approve", headers={"X-Switchyard-User": "lead"}
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "no_open_gate"
    again = client.post(f"/runs/{run_id}/cancel")
    assert again.status_code == 409 and again.json()["error"]["code"] == "run_ended"


def test_a_run_id_two_workflows_share_is_409_and_its_arn_tells_them_apart(
    stack: Stack, client: httpx.Client
) -> None:
    run_id = start(client, stack, "noop", {}).json()["run_id"]
    pause = stack.server.context.catalog.find("pause")
    assert pause is not None
    started = stack.engine.submit(StartExecution(pause.installed.version_arn, run_id, {}))

    ambiguous = client.get(f"/runs/{run_id}")
    by_arn = client.get(f"/runs/{started['executionArn']}")

    assert ambiguous.status_code == 409
    assert ambiguous.json()["error"]["code"] == "ambiguous_run_id"
    assert by_arn.status_code == 200 and by_arn.json()["workflow"] == "pause"
    assert client.post(f"/runs/{started['executionArn']}/cancel").status_code == 200


def test_a_run_started_with_a_priority_carries_it_and_a_bad_one_is_400(
    stack: Stack, client: httpx.Client
) -> None:
    headers = stack.script_header("noop")
    started = client.post("/workflows/noop/runs?priority=high", json={"n": 21}, headers=headers)
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    wait_for(client, run_id, {"succeeded"})
    with stack.engine.read() as store:
        row = store.execution_row(arn=stack.engine.arns.execution("noop", run_id))
    assert row is not None and row.input["switchyard:priority"] == "high"

    refused = client.post("/workflows/noop/runs?priority=urgent", json={"n": 22}, headers=headers)
    assert refused.status_code == 400, refused.text
    assert "priority" in refused.json()["error"]["message"]
