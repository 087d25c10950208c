"""Decisions over HTTP: who decides, role checks, gates that are not open, resuming paused runs
(an `on_error: pause` step and a step the budget refused)."""

from __future__ import annotations

import json
import time

import httpx
import psycopg
import pytest

from switchyard.constants import ROLES_ENV
from tests.unit.api.support import CUSTOMER_SUPPORT_INPUT, Stack, start, wait_for

LEAD = {"X-Switchyard-User": "lead@example.com"}


@pytest.fixture
def waiting_run(stack: Stack, client: httpx.Client) -> str:
    run_id: str = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT).json()["run_id"]
    wait_for(client, run_id, {"waiting"})
    return run_id


def test_a_decision_needs_the_reviewer_header(client: httpx.Client, waiting_run: str) -> None:
    for action in ("approve", "reject"):
        answer = client.post(f"/runs/{waiting_run}/steps/approve/{action}", json={})
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "missing_reviewer"
    assert client.get(f"/runs/{waiting_run}").json()["status"] == "waiting"


def test_a_person_outside_the_gates_role_is_403(
    client: httpx.Client, waiting_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROLES_ENV, json.dumps({"support_lead": ["lead@example.com"]}))

    refused = client.post(
        f"/runs/{waiting_run}/steps/approve/approve", headers={"X-Switchyard-User": "intern"}
    )
    allowed = client.post(f"/runs/{waiting_run}/steps/approve/approve", headers=LEAD)

    assert refused.status_code == 403
    assert refused.json()["error"] == {
        "code": "forbidden",
        "message": "intern may not decide for support_lead"
        " (SWITCHYARD_ROLES lists who may; ask one of them)",
    }
    assert allowed.status_code == 200
    wait_for(client, waiting_run, {"succeeded"})


def test_edits_of_fields_the_gate_does_not_show_are_400(
    client: httpx.Client, waiting_run: str
) -> None:
    answer = client.post(
        f"/runs/{waiting_run}/steps/approve/approve", json={"edits": {"to": "x"}}, headers=LEAD
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_decision"
    assert client.get(f"/runs/{waiting_run}").json()["status"] == "waiting"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"note": 3}, "'note' must be a string"),
        ({"edits": ["draft"]}, "'edits' must be a JSON object"),
        ({"notes": "typo"}, "unknown member(s) notes"),
        ("approve", "must be a JSON object"),
    ],
)
def test_a_malformed_decision_body_is_400(
    client: httpx.Client, waiting_run: str, body: object, problem: str
) -> None:
    answer = client.post(f"/runs/{waiting_run}/steps/approve/approve", json=body, headers=LEAD)
    assert answer.status_code == 400
    assert problem in answer.json()["error"]["message"]


def test_a_step_with_no_open_gate_is_409(client: httpx.Client, waiting_run: str) -> None:
    wrong_step = client.post(f"/runs/{waiting_run}/steps/draft/approve", headers=LEAD)
    not_paused = client.post(f"/runs/{waiting_run}/resume", headers=LEAD)

    assert wrong_step.status_code == 409
    assert wrong_step.json()["error"]["code"] == "no_open_gate"
    assert "at draft" in wrong_step.json()["error"]["message"]
    assert not_paused.status_code == 409
    assert "no open paused step" in not_paused.json()["error"]["message"]


def test_a_decision_on_an_unknown_run_is_404(client: httpx.Client) -> None:
    answer = client.post("/runs/nope/steps/approve/approve", headers=LEAD)
    assert answer.status_code == 404


def test_resuming_a_paused_run_runs_its_step_again(stack: Stack, client: httpx.Client) -> None:
    run_id = start(client, stack, "pause", {}).json()["run_id"]
    paused = wait_for(client, run_id, {"paused"})
    (gate,) = paused["waiting_for"]
    assert gate["step"] == "shaky" and gate["kind"] == "pause"
    assert client.post(f"/runs/{run_id}/resume").status_code == 400  # who resumes?

    resumed = client.post(f"/runs/{run_id}/resume", json={"note": "try again"}, headers=LEAD)

    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["resumed"] is True and resumed.json()["step"] == "shaky"
    # The step ran again and, as a resumed step is attempt 1 again, its script failed it again:
    # the run pauses at a new gate.
    again = _paused_again(client, run_id, gate["gate_id"])
    assert again["steps"]["shaky"]["status"] == "failed"
    assert client.post(f"/runs/{run_id}/cancel").json()["status"] == "cancelled"


def _paused_again(client: httpx.Client, run_id: str, old_gate: str) -> dict[str, object]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run: dict[str, object] = client.get(f"/runs/{run_id}").json()
        gates = run["waiting_for"]
        assert isinstance(gates, list)
        if run["status"] == "paused" and gates and gates[0]["gate_id"] != old_gate:
            return run
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} did not pause again")


def test_a_run_the_budget_paused_succeeds_once_its_budget_is_raised(
    stack: Stack, client: httpx.Client
) -> None:
    run_id = start(client, stack, "budget-pause", {}).json()["run_id"]
    paused = wait_for(client, run_id, {"paused"})
    assert paused["waiting_for"][0]["kind"] == "budget"
    bad = client.post(f"/runs/{run_id}/resume", json={"raise_budget_usd": -1}, headers=LEAD)
    assert bad.status_code == 400

    resumed = client.post(f"/runs/{run_id}/resume", json={"raise_budget_usd": 1.5}, headers=LEAD)

    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["budget_raised_usd"] == 1.5
    assert resumed.json()["budget_raised_scope"] == f"run:{run_id}"
    with psycopg.connect(stack.engine.conninfo) as conn:
        row = conn.execute(
            "SELECT limit_micros FROM budget_scopes WHERE scope = %s", (f"run:{run_id}",)
        ).fetchone()
    assert row is not None and row[0] == 1_500_050  # $0.00005 + $1.50
    done = wait_for(client, run_id, {"succeeded"})
    assert done["steps"]["pricey"]["output"] == {"text": "worth it"}


def test_with_an_operators_role_only_operators_resume_and_the_budget_stays(
    stack: Stack, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        ROLES_ENV,
        json.dumps({"support_lead": ["lead@example.com"], "operators": ["ops@example.com"]}),
    )
    with psycopg.connect(stack.engine.conninfo) as conn:  # forget the estimate earlier runs left
        conn.execute("DELETE FROM budget_averages")
    run_id = start(client, stack, "budget-pause", {}).json()["run_id"]
    wait_for(client, run_id, {"paused"})

    refused = client.post(f"/runs/{run_id}/resume", json={"raise_budget_usd": 1.5}, headers=LEAD)

    assert refused.status_code == 403
    assert refused.json()["error"] == {
        "code": "forbidden",
        "message": "lead@example.com may not decide for operators"
        " (SWITCHYARD_ROLES lists who may; ask one of them)",
    }
    with psycopg.connect(stack.engine.conninfo) as conn:
        row = conn.execute(
            "SELECT limit_micros FROM budget_scopes WHERE scope = %s", (f"run:{run_id}",)
        ).fetchone()
    assert row is None or row[0] == 50  # the refused resume raised nothing
    operator = {"X-Switchyard-User": "ops@example.com"}
    resumed = client.post(
        f"/runs/{run_id}/resume", json={"raise_budget_usd": 1.5}, headers=operator
    )
    assert resumed.status_code == 200, resumed.text
    wait_for(client, run_id, {"succeeded"})
