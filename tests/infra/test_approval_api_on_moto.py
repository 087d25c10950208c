"""approval_api on moto: the synthesized, deployed definition of a gated workflow runs on moto's
Step Functions; the real approval_notify records its gate in PostgreSQL and mails each person
through SES (moto), with the signing key from Secrets Manager (moto); the real approval_api
handler, given API Gateway HTTP API events, shows the page and decides, and its SendTaskSuccess
releases the parked execution. The synthesized template gives it exactly the grants it needs."""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from moto import mock_aws
from moto.backends import get_backend

from switchyard.constants import (
    APPROVAL_SIGNING_SECRET_ENV,
    BUDGET_TABLE_ENV,
    DATABASE_URL_ENV,
    PUBLIC_URL_ENV,
    ROLES_ENV,
    SES_IDENTITY_ENV,
)
from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.runtime import wiring
from tests.infra.synth import Synthesized
from tests.infra.test_deployed_definitions_on_moto import deployed_definitions
from tests.pg import pg_conninfo
from tests.scenarios.harness.moto_runner import (
    ACCOUNT,
    REGION,
    create_machines,
    moto_step_functions,
)
from tests.scenarios.harness.scenario import Scenario
from tests.scenarios.harness.scripted import ScriptedFunctions
from tests.unit.gates.test_notify import approval, handler_module

__all__ = ["pg_conninfo"]
pytestmark = pytest.mark.slow  # the corpus synth

PUBLIC = "https://abc123.execute-api.us-east-1.amazonaws.com"
SENDER = "approvals@example.com"
PEOPLE = {"lead": [{"name": "dana", "email": "dana@example.com"}]}
FORM = {"content-type": "application/x-www-form-urlencoded"}
LINK = re.compile(re.escape(PUBLIC) + r"/approvals/[A-Za-z0-9_.-]+")
BUDGET_TABLE = "switchyard-budgets"
"""The budget ledger's table (moto's, created by the tests that raise a budget)."""


class DeployedFunctions(ScriptedFunctions):
    """The scenario's script for agent and tool steps; the real approval_notify."""

    def invoke(self, function: str, payload: dict[str, Any]) -> Any:
        if function == "approval_notify":
            notify = handler_module("approval_notify").handler
            return notify(payload, LambdaContext("approval_notify", "arn:aws:lambda:::function:n"))
        return super().invoke(function, payload)


def _clear() -> None:
    wiring.step_services.cache_clear()
    wiring.database_pool.cache_clear()
    handler_module("approval_notify")._store.cache_clear()
    handler_module("approval_api")._adapter.cache_clear()


@pytest.fixture
def aws_environment(pg_conninfo: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(DATABASE_URL_ENV, pg_conninfo)
    monkeypatch.setenv(ROLES_ENV, json.dumps(PEOPLE))
    monkeypatch.setenv(PUBLIC_URL_ENV, PUBLIC)
    monkeypatch.setenv(SES_IDENTITY_ENV, SENDER)
    monkeypatch.setenv(BUDGET_TABLE_ENV, BUDGET_TABLE)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for name in ("POWERTOOLS_TRACE_DISABLED", "POWERTOOLS_METRICS_DISABLED"):
        monkeypatch.setenv(name, "true")
    _clear()
    yield
    pool = wiring.database_pool()
    _clear()
    if pool is not None:
        pool.close()


def http_event(method: str, path: str, body: str = "", **headers: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"host": PUBLIC.removeprefix("https://"), **headers},
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "abc123",
            "domainName": PUBLIC.removeprefix("https://"),
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "mail-client",
            },
            "requestId": secrets.token_hex(8),
            "routeKey": f"{method} {path}",
            "stage": "$default",
            "time": "01/Dec/2026:12:00:00 +0000",
            "timeEpoch": 1_795_000_000_000,
        },
        "body": base64.b64encode(body.encode()).decode(),
        "isBase64Encoded": True,
    }


def call_api(event: dict[str, Any]) -> dict[str, Any]:
    api = handler_module("approval_api").handler
    answer: dict[str, Any] = api(
        event, LambdaContext("approval_api", "arn:aws:lambda:::function:a")
    )
    if answer.get("isBase64Encoded"):
        answer["body"] = base64.b64decode(answer["body"]).decode()
    return answer


def test_a_person_releases_a_deployed_machine_parked_at_a_gate(
    corpus: Synthesized,
    scenarios: dict[str, Scenario],
    aws_environment: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = scenarios["gate-approved-with-edits"]
    definitions = deployed_definitions(corpus, scenario)
    functions = DeployedFunctions(scenario.script)
    with moto_step_functions(functions) as sfn:
        key = boto3.client("secretsmanager").create_secret(
            Name="approval-signing", SecretString=json.dumps({"k1": secrets.token_urlsafe(32)})
        )
        monkeypatch.setenv(APPROVAL_SIGNING_SECRET_ENV, key["ARN"])
        arn = create_machines(sfn, scenario.children, scenario.workflow, definitions)
        execution = sfn.start_execution(
            stateMachineArn=arn, name="deployed-gate", input=json.dumps(scenario.input)
        )["executionArn"]
        link = _listed_link()  # the gate has the console channel only: operators list it
        token = link.rsplit("/", 1)[-1]
        page = call_api(http_event("GET", f"/approvals/{token}"))
        assert page["statusCode"] == 200 and "Approve the reply to a@example.com" in page["body"]
        assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"
        form = urlencode({"decision": "approve", "note": "from the page"})
        decided = call_api(http_event("POST", f"/approvals/{token}", form, **FORM))
        assert decided["statusCode"] == 200, decided["body"]
        described = _wait_done(sfn, execution)
        assert described["status"] == "SUCCEEDED"
        again = call_api(http_event("POST", f"/approvals/{token}", form, **FORM))
        assert again["statusCode"] == 409
        forged = call_api(http_event("GET", f"/approvals/{token[:-2]}xx"))
        assert forged["statusCode"] == 404
        events = sfn.get_execution_history(executionArn=execution)["events"]
    decided_events = [e for e in events if '"reviewer": "dana"' in json.dumps(e, default=str)
                      or '\\"reviewer\\": \\"dana\\"' in json.dumps(e, default=str)]  # fmt: skip
    assert decided_events  # the gate's output names the person the link was sent to


def _listed_link(timeout: float = 30.0) -> str:
    """`GET /approvals` (the operators' route) once approval_notify has opened the gate."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = call_api(http_event("GET", "/approvals"))
        assert listed["statusCode"] == 200
        approvals = json.loads(listed["body"])["approvals"]
        if approvals:
            ((person,),) = [a["links"] for a in approvals]
            assert person["person"] == "dana" and LINK.fullmatch(person["url"])
            return str(person["url"])
        time.sleep(0.05)
    raise AssertionError("no open gate listed")


def test_approval_notify_mails_each_person_their_link_through_ses(
    aws_environment: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = approval(
        {"message": "Refund {{ inputs.amount }}?", "channels": ["email"]}, inputs={"amount": 9}
    )
    with mock_aws():
        key = boto3.client("secretsmanager").create_secret(
            Name="approval-signing", SecretString=json.dumps({"k1": secrets.token_urlsafe(32)})
        )
        monkeypatch.setenv(APPROVAL_SIGNING_SECRET_ENV, key["ARN"])
        boto3.client("ses").verify_email_identity(EmailAddress=SENDER)
        notify = handler_module("approval_notify").handler
        opened = notify(
            request.model_dump(mode="json"),
            LambdaContext("approval_notify", "arn:aws:lambda:::function:n"),
        )
        (sent,) = get_backend("ses")[ACCOUNT][REGION].sent_messages
    assert opened["notified"][0] == {
        "channel": "email", "sent": True, "messages": [{"person": "dana", "sent": True}]
    }  # fmt: skip
    raw = str(sent.raw_data)
    assert "dana@example.com" in raw and SENDER in raw and "Refund 9?" in raw
    assert LINK.search(raw) and request.task_token not in raw


def _wait_done(sfn: Any, execution: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = dict(sfn.describe_execution(executionArn=execution))
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError("the execution did not end")


def test_the_stack_grants_approval_api_exactly_what_it_needs(corpus: Synthesized) -> None:
    template = corpus.template
    resources = template["Resources"]
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"]["AuthorizationType"]
        for r in resources.values()
        if r["Type"] == "AWS::ApiGatewayV2::Route"
        and "approvals" in r["Properties"]["RouteKey"] + "slack"
    }
    assert routes["GET /approvals"] == "AWS_IAM"
    assert routes["GET /approvals/{token}"] == routes["POST /approvals/{token}"] == "NONE"
    statements = [  # approval_api's, in its inline policy or the managed ones CDK adds past it
        s
        for logical_id, r in resources.items()
        if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        and "ApprovalApi" in logical_id
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    task_tokens = [s for s in statements if "states:SendTaskSuccess" in json.dumps(s["Action"])]
    (grant,) = task_tokens
    assert sorted(grant["Action"]) == ["states:SendTaskFailure", "states:SendTaskSuccess"]
    listed = json.dumps(grant["Resource"])
    assert ":stateMachine:Switchyard-gate-approved" in listed and "*" not in listed
    (executions,) = [s for s in statements if "states:StopExecution" in json.dumps(s["Action"])]
    assert sorted(executions["Action"]) == [
        "states:DescribeExecution",
        "states:DescribeStateMachineForExecution",
        "states:StopExecution",
    ]
    named = [json.dumps(r) for r in executions["Resource"]]
    assert len(named) == len(grant["Resource"])  # each machine's executions, and no other's
    assert all(":execution:Switchyard-" in r and r.endswith(':*"]]}') for r in named), named[0]
    (resets,) = [s for s in statements if "states:StartExecution" in json.dumps(s["Action"])]
    assert sorted(resets["Action"]) == [
        "states:DescribeStateMachine",
        "states:DescribeStateMachineAlias",
        "states:ListStateMachineAliases",
        "states:StartExecution",
    ]  # an operator's reset: each machine, its versions and aliases, and no other's
    machines = [json.dumps(r) for r in resets["Resource"]]
    assert len(machines) == 2 * len(grant["Resource"])
    assert all(":stateMachine:Switchyard-" in r for r in machines), machines[0]
    (budget,) = [s for s in statements if "dynamodb:" in json.dumps(s["Action"])]
    assert sorted(budget["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    assert "BudgetTable" in json.dumps(budget["Resource"])
    approval_statements = [
        s
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::IAM::Policy"
        and ("ApprovalApi" in logical_id or "ApprovalNotify" in logical_id)
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    ses = [s for s in approval_statements if "ses:SendEmail" in json.dumps(s["Action"])]
    assert len(ses) == 2  # approval_notify and approval_api
    for grant in ses:
        assert all("identity/" in json.dumps(r) for r in grant["Resource"])
        assert grant["Condition"] == {"StringEquals": {"ses:FromAddress": "support@example.com"}}
