"""approval_api's operator routes on moto: the REST API's own decide, resume and cancel routes,
served by the real handler from API Gateway events an IAM principal signed, act on synthesized,
deployed machines running on moto's Step Functions, parked at a gate the real approval_notify
recorded in PostgreSQL; a raised budget lands in the DynamoDB ledger (moto). The synthesized
template makes these routes IAM-authorized and leaves the link and Slack routes public."""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest

from infra.constructs.approvals import OPERATOR_ROUTES, PUBLIC_ROUTES
from switchyard.api import operators
from switchyard.constants import APPROVAL_SIGNING_SECRET_ENV, ROLES_ENV
from switchyard.runtime import wiring
from switchyard.stores.budget import DynamoDBBudgetLedger, Scope, create_budget_table
from tests.infra.synth import Synthesized
from tests.infra.test_approval_api_on_moto import (
    BUDGET_TABLE,
    PEOPLE,
    DeployedFunctions,
    _wait_done,
    aws_environment,
    call_api,
    http_event,
)
from tests.infra.test_deployed_definitions_on_moto import deployed_definitions
from tests.pg import pg_conninfo
from tests.scenarios.harness.moto_runner import create_machines, moto_step_functions
from tests.scenarios.harness.scenario import Scenario
from tests.unit.gates.test_notify import handler_module

__all__ = ["aws_environment", "pg_conninfo"]
pytestmark = pytest.mark.slow  # the corpus synth

OPERATOR_ARN = "arn:aws:iam::123456789012:user/olga"
ROLES = {**PEOPLE, "operators": ["olga"]}


def operator_event(
    path: str, body: dict[str, Any] | None = None, *, user: str | None = "olga"
) -> dict[str, Any]:
    """A POST to an operator route, as API Gateway passes it once IAM authorized the caller."""
    headers = {"content-type": "application/json"}
    if user is not None:
        headers["x-switchyard-user"] = user
    event = http_event("POST", path, json.dumps(body) if body is not None else "", **headers)
    event["requestContext"]["authorizer"] = {
        "iam": {"accountId": "123456789012", "userArn": OPERATOR_ARN, "userId": "AIDAOLGA"}
    }
    return event


def answer(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    called = call_api(event)
    return int(called["statusCode"]), json.loads(called["body"])


@contextmanager
def parked(
    corpus: Synthesized, scenario: Scenario, monkeypatch: pytest.MonkeyPatch, run_id: str
) -> Iterator[tuple[Any, str]]:
    """moto running the scenario's deployed machine as `run_id`, once its gate is recorded."""
    monkeypatch.setenv(ROLES_ENV, json.dumps(ROLES))
    definitions = deployed_definitions(corpus, scenario)
    with moto_step_functions(DeployedFunctions(scenario.script)) as sfn:
        key = boto3.client("secretsmanager").create_secret(
            Name="approval-signing", SecretString=json.dumps({"k1": secrets.token_urlsafe(32)})
        )
        monkeypatch.setenv(APPROVAL_SIGNING_SECRET_ENV, key["ARN"])
        create_budget_table(boto3.client("dynamodb"), BUDGET_TABLE)
        arn = create_machines(sfn, scenario.children, scenario.workflow, definitions)
        execution = sfn.start_execution(
            stateMachineArn=arn, name=run_id, input=json.dumps(scenario.input)
        )["executionArn"]
        _wait_open_gate(run_id)
        yield sfn, execution


def _wait_open_gate(run_id: str, timeout: float = 30.0) -> None:
    pool = wiring.database_pool()
    assert pool is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with pool.connection() as conn:
            if conn.execute(
                "SELECT 1 FROM gates WHERE run_id = %s AND status = 'open'", (run_id,)
            ).fetchone():
                return
        time.sleep(0.05)
    raise AssertionError(f"{run_id} opened no gate")


def _token(run_id: str) -> str:
    pool = wiring.database_pool()
    assert pool is not None
    with pool.connection() as conn:
        row = conn.execute("SELECT token FROM gates WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None
    return str(row[0])


def _gate_rows(run_id: str) -> list[tuple[str, str | None, str | None]]:
    pool = wiring.database_pool()
    assert pool is not None
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT status, decision, reviewer FROM gates WHERE run_id = %s", (run_id,)
        ).fetchall()
    return [(str(s), d, r) for s, d, r in rows]


def test_an_operator_approves_a_gate_with_edits_and_the_machine_goes_on(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = scenarios["gate-approved-with-edits"]
    with parked(corpus, scenario, monkeypatch, "op-approve") as (sfn, execution):
        path = "/runs/op-approve/steps/approve/approve"
        body = {"note": "ship it", "edits": {"draft": "v2"}}
        status, refused = answer(operator_event(path, body, user="mallory"))
        assert status == 403, refused  # not a person of the gate's role (lead)
        status, missing = answer(operator_event(path, body, user=None))
        assert (status, missing["error"]["code"]) == (400, "missing_reviewer")
        status, bad = answer(operator_event(path, {"edits": {"nope": 1}}, user="dana"))
        assert (status, bad["error"]["code"]) == (400, "invalid_decision")
        assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
        status, decided = answer(operator_event(path, body, user="dana"))
        assert status == 200, decided
        assert decided == {
            "run_id": "op-approve", "step": "approve", "decision": "approved",
            "reviewer": "dana", "note": "ship it", "links": {"run": "/runs/op-approve"},
        }  # fmt: skip
        assert _wait_done(sfn, execution)["status"] == "SUCCEEDED"
        status, again = answer(operator_event(path, body, user="dana"))
        assert (status, again["error"]["code"]) == (404, "run_not_found")  # waits no more
        by_arn = f"/runs/{execution}/steps/approve/approve"
        status, again = answer(operator_event(by_arn, body, user="dana"))
        assert (status, again["error"]["code"]) == (409, "no_open_gate")
        assert "it is succeeded" in again["error"]["message"]
        history = json.dumps(sfn.get_execution_history(executionArn=execution), default=str)
    assert '\\"draft\\": \\"v2\\"' in history  # the edit reached the next step
    assert _gate_rows("op-approve") == [("decided", "approved", "dana")]


def test_an_operator_resumes_a_paused_machine_and_its_step_runs_again(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = scenarios["on-error-pause-resume"]
    with parked(corpus, scenario, monkeypatch, "op-resume") as (sfn, execution):
        status, refused = answer(operator_event("/runs/op-resume/resume", user="dana"))
        assert status == 403, refused  # a pause is the operators' to resume
        status, resumed = answer(operator_event("/runs/op-resume/resume", {"note": "fixed"}))
        assert status == 200, resumed
        assert resumed["step"] == "shaky" and resumed["reviewer"] == "olga"
        described = _wait_done(sfn, execution)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"])["next"] == {"text": "done"}
    assert _gate_rows("op-resume") == [("decided", "resume", "olga")]


def test_an_operator_raises_the_budget_in_dynamodb_and_resumes(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = scenarios["budget-pause-resume"]
    with parked(corpus, scenario, monkeypatch, "op-budget") as (sfn, execution):
        ledger = DynamoDBBudgetLedger(BUDGET_TABLE)
        scope = Scope("run", "op-budget")
        ledger.set_limit(scope, 500_000)  # $0.50, as the run's first reservation records it
        body = {"raise_budget_usd": 0.25}
        status, resumed = answer(operator_event("/runs/op-budget/resume", body))
        assert status == 200, resumed
        assert resumed["budget_raised_usd"] == 0.25
        assert resumed["budget_raised_scope"] == "run:op-budget"
        assert ledger.totals(scope).limit_micros == 750_000
        assert _wait_done(sfn, execution)["status"] == "SUCCEEDED"


def test_an_operator_cancels_a_paused_machine_and_moto_stops_it(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = scenarios["on-error-pause-cancel"]
    with parked(corpus, scenario, monkeypatch, "op-cancel") as (sfn, execution):
        status, refused = answer(operator_event("/runs/op-cancel/cancel", user=None))
        assert status == 403, refused  # with an operators role, only they cancel
        status, cancelled = answer(operator_event("/runs/op-cancel/cancel", {"note": "stop"}))
        assert status == 200, cancelled
        # The status is Step Functions' right after StopExecution: ABORTED on AWS; moto's
        # worker thread is still parked at the task token (see below).
        assert cancelled.pop("status") in ("cancelled", "running")
        assert cancelled == {"run_id": "op-cancel", "links": {"self": "/runs/op-cancel"}}
        # moto deviation (as tests/scenarios/harness/moto_runner.py's cancel): a stopped
        # execution stays blocked on its task token until it is answered; AWS ends it at once.
        sfn.send_task_success(taskToken=_token("op-cancel"), output="{}")
        assert _wait_done(sfn, execution)["status"] == "ABORTED"
        # The gate is closed: the run id no longer names a waiting run; its ARN still does.
        status, gone = answer(operator_event("/runs/op-cancel/cancel"))
        assert (status, gone["error"]["code"]) == (404, "run_not_found")
        assert "execution ARN" in gone["error"]["message"]
        status, ended = answer(operator_event(f"/runs/{execution}/cancel"))
        assert (status, ended["error"]["code"]) == (409, "run_ended")
        status, resumed = answer(operator_event(f"/runs/{execution}/resume"))
        assert (status, resumed["error"]["code"]) == (409, "no_open_gate")
    assert _gate_rows("op-cancel") == [("decided", "cancel", "olga")]


def test_unknown_malformed_and_foreign_runs_are_404_and_bad_bodies_400(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = scenarios["on-error-pause-cancel"]
    with parked(corpus, scenario, monkeypatch, "op-bad") as (sfn, execution):
        unknown = execution.replace(":op-bad", ":op-nobody")
        foreign = "arn:aws:states:us-east-1:123456789012:execution:Other-pause-cancel:op-bad"
        topic = "arn:aws:sns:us-east-1:123456789012:op-bad"
        for run in ("nobody", unknown, foreign, topic, "arn:aws:states:nope"):
            status, missing = answer(operator_event(f"/runs/{run}/cancel"))
            assert (status, missing["error"]["code"]) == (404, "run_not_found"), run
        assert answer(operator_event("/runs/op%00bad/cancel"))[0] == 400  # a NUL
        for body in ("{", "[]", '{"note": 5}', '{"extra": 1}'):
            event = operator_event("/runs/op-bad/cancel")
            event["body"] = base64.b64encode(body.encode()).decode()
            status, bad = answer(event)
            assert status == 400, (body, bad)
        event = operator_event("/runs/op-bad/resume", {"raise_budget_usd": -1})
        assert answer(event)[0] == 400
        assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
    assert _gate_rows("op-bad") == [("open", None, None)]  # nothing changed


def test_the_operator_routes_are_iam_authorized_and_the_link_routes_public(
    corpus: Synthesized,
) -> None:
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"]["AuthorizationType"]
        for r in corpus.template["Resources"].values()
        if r["Type"] == "AWS::ApiGatewayV2::Route"
    }
    for key in ("POST /runs/{run_id}/steps/{step}/approve", "POST /runs/{run_id}/cancel"):
        assert key in operators.route_keys()
    for key in ("GET /approvals", *operators.route_keys()):
        assert routes[key] == "AWS_IAM", key
    for key in PUBLIC_ROUTES:
        assert routes[key] == "NONE", key
    unsigned = {k for k, auth in routes.items() if auth == "NONE"}
    assert unsigned == set(PUBLIC_ROUTES)  # the webhooks of the corpus: none


def test_the_handler_serves_exactly_the_routes_the_stack_routes_to_it(
    aws_environment: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One definition: the deployed app's routes are the construct's, and a route is public at
    the gateway exactly when the app serves it without the operators' authentication."""
    with moto_step_functions(DeployedFunctions({})):
        key = boto3.client("secretsmanager").create_secret(
            Name="approval-signing", SecretString=json.dumps({"k1": secrets.token_urlsafe(32)})
        )
        monkeypatch.setenv(APPROVAL_SIGNING_SECRET_ENV, key["ARN"])
        app = handler_module("approval_api")._adapter().app
    served = {
        f"{method.upper()} {path}": operation.get("security") == []
        for path, operations in app.openapi()["paths"].items()
        for method, operation in operations.items()
    }
    assert set(served) == {*PUBLIC_ROUTES, *OPERATOR_ROUTES}
    assert {key for key, public in served.items() if public} == set(PUBLIC_ROUTES)


def test_a_paused_machine_is_resumed_through_its_link_as_a_gate_is_decided(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pause is linked like a gate: `GET /approvals` lists it with each operator's link, the
    link's page offers Resume and Cancel, and its POST releases the machine."""
    scenario = scenarios["on-error-pause-resume"]
    with parked(corpus, scenario, monkeypatch, "link-resume") as (sfn, execution):
        listed = call_api(http_event("GET", "/approvals"))
        approvals = json.loads(listed["body"])["approvals"]
        (pause,) = [a for a in approvals if a["run_id"] == "link-resume"]
        assert pause["kind"] == "pause"
        ((olga,),) = [pause["links"]]
        assert olga["person"] == "olga"
        token = olga["url"].rsplit("/", 1)[-1]
        page = call_api(http_event("GET", f"/approvals/{token}"))
        assert 'value="resume"' in page["body"] and 'value="cancel"' in page["body"]
        form = {"content-type": "application/x-www-form-urlencoded"}
        decided = call_api(http_event("POST", f"/approvals/{token}", "decision=resume", **form))
        assert decided["statusCode"] == 200, decided["body"]
        assert _wait_done(sfn, execution)["status"] == "SUCCEEDED"
    assert _gate_rows("link-resume") == [("decided", "resume", "olga")]
