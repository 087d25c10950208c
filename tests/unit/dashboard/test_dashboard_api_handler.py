"""functions/dashboard_api: the dashboard's data API as Lambda serves it on AWS, given API Gateway
HTTP API (payload 2.0) events with the JWT authorizer's claims, over the same PostgreSQL as the
local server: the same JSON as the local routes, the signed-in person deciding gates (through
Step Functions' task-token API, here the local engine's endpoint), no answer without claims."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from switchyard.constants import ROLES_ENV
from switchyard.engine.api import sfn_api_in_thread
from switchyard.engine.dispatch.lambda_context import LambdaContext
from tests.unit.api.support import start, unique, wait_for
from tests.unit.dashboard.browser import start_support_run
from tests.unit.dashboard.support import DashboardStack
from tests.unit.gates.test_notify import handler_module

HOST = "abc123.execute-api.us-east-1.amazonaws.com"
DANA = {"email": "dana@example.com", "email_verified": "true", "cognito:username": "d-1"}
MALLORY = {"email": "mallory@example.com", "email_verified": "true", "cognito:username": "m-1"}
PEOPLE = {"support_lead": [{"name": "dana", "email": "Dana@Example.com"}]}


def http_event(
    method: str,
    path: str,
    *,
    query: dict[str, Any] | None = None,
    body: str = "",
    claims: dict[str, str] | None = DANA,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What the HTTP API gives the function for `GET|POST /api/dashboard/{proxy+}`."""
    route = f"{method} /api/dashboard/{{proxy+}}"
    context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "abc123",
        "domainName": HOST,
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.9",
            "userAgent": "Mozilla/5.0",
        },
        "requestId": secrets.token_hex(8),
        "routeKey": route,
        "stage": "$default",
        "time": "01/Dec/2026:12:00:00 +0000",
        "timeEpoch": 1_795_000_000_000,
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    return {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": urlencode(query or {}),
        "headers": {"host": HOST, "content-type": "application/json", **(headers or {})},
        "requestContext": context,
        "body": base64.b64encode(body.encode()).decode(),
        "isBase64Encoded": True,
    }


def invoke(event: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    """The function's answer: status, JSON body, headers."""
    function = handler_module("dashboard_api")
    answer = function.handler(event, LambdaContext("dashboard_api", "arn:aws:lambda:::function:d"))
    body = answer.get("body") or ""
    if answer.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return answer["statusCode"], json.loads(body), answer.get("headers", {})


@pytest.fixture
def dashboard_api(
    board: DashboardStack, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[int, Any, dict[str, str]]]]:
    """The handler, built afresh on the test database (the board's handler environment), with
    the region and credentials Lambda gives a function."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    function = handler_module("dashboard_api")
    function._adapter.cache_clear()
    yield lambda method, path, **kw: invoke(http_event(method, path, **kw))
    function._adapter.cache_clear()


def local(client: httpx.Client, path: str, query: dict[str, Any] | None = None) -> tuple[int, Any]:
    answer = client.get(path, params=query)
    return answer.status_code, answer.json()


def timeless(answer: tuple[int, Any]) -> tuple[int, Any]:
    """An answer without what the clock changes between two reads: the time an open run has
    used of its `max_duration` budget (checked to be within a few seconds instead)."""
    status, body = answer
    if isinstance(body, dict) and body.get("ended_at") is None and "budgets" in body:
        body = dict(body)
        budgets = []
        for budget in body["budgets"]:
            if budget["kind"] == "seconds":
                assert 0 <= budget["used"] < 120, budget
                budget = {**budget, "used": None, "left": None}
            budgets.append(budget)
        body["budgets"] = budgets
    return status, body


def test_the_function_answers_every_read_as_the_local_route_does(
    board: DashboardStack, dashboard_api: Callable[..., tuple[int, Any, dict[str, str]]]
) -> None:
    prefix = unique("lambda")
    with board.rest() as rest:
        answer = start(rest, board.stack, "noop", {"n": 1}, key=f"{prefix}-done")
        assert answer.status_code == 201, answer.text
        wait_for(rest, f"{prefix}-done", {"succeeded"})
    parked = start_support_run(board)
    reads: list[tuple[str, dict[str, Any] | None]] = [
        ("/api/dashboard/runs", {"q": prefix}),
        ("/api/dashboard/runs", {"workflow": "customer-support", "limit": 3}),
        (f"/api/dashboard/runs/{prefix}-done", None),
        (f"/api/dashboard/runs/{parked}", None),
        (f"/api/dashboard/runs/{parked}/values/input", None),
        ("/api/dashboard/workflows", {"days": 7}),
        ("/api/dashboard/workflows/customer-support", None),
        ("/api/dashboard/costs", {"days": 30}),
        # refusals too: an unknown run, a bad query, a bad value name, an unknown path
        ("/api/dashboard/runs/no-such-run", None),
        ("/api/dashboard/runs", {"limit": 0}),
        ("/api/dashboard/runs", {"since": "yesterday"}),
        (f"/api/dashboard/runs/{parked}/values/secrets", None),
        ("/api/dashboard/nowhere", None),
    ]
    with board.client() as client:
        for path, query in reads:
            # the engine may commit another test's run between two reads of a total: the
            # function's answer must equal the local one read just before or just after it
            before = timeless(local(client, path, query))
            status, body, headers = dashboard_api("GET", path, query=query)
            after = timeless(local(client, path, query))
            assert timeless((status, body)) in (before, after), (path, query, status, before)
            if status == 200:
                assert headers.get("cache-control") == "no-store"
    assert body["error"]["code"] == "not_found"  # the last: the API's error shape, not FastAPI's


def test_a_gate_is_decided_by_the_signed_in_person_never_by_a_header(
    board: DashboardStack,
    dashboard_api: Callable[..., tuple[int, Any, dict[str, str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = start_support_run(board)
    monkeypatch.setenv(ROLES_ENV, json.dumps(PEOPLE))
    path = f"/api/dashboard/runs/{run_id}/steps/approve/approve"
    with sfn_api_in_thread(board.stack.engine, from_env=False) as sfn:
        monkeypatch.setenv("AWS_ENDPOINT_URL_SFN", sfn.endpoint_url)
        status, body, _ = dashboard_api(
            "POST", path, body="{}", claims=MALLORY, headers={"x-switchyard-user": "dana"}
        )
        assert status == 403, body
        assert "mallory@example.com may not decide for support_lead" in body["error"]["message"]
        status, body, _ = dashboard_api("POST", path, body='{"note": "ship it"}', claims=DANA)
        assert status == 200, body
        assert body == {
            "run_id": run_id, "step": "approve", "decision": "approved", "reviewer": "dana"
        }  # fmt: skip
        with board.rest() as rest:
            done = wait_for(rest, run_id, {"succeeded"})
        assert done["status"] == "succeeded"
        status, body, _ = dashboard_api("POST", path, body="{}", claims=DANA)
        assert status == 409 and body["error"]["code"] == "no_open_gate"


def test_without_the_authorizers_claims_nothing_is_answered(
    board: DashboardStack, dashboard_api: Callable[..., tuple[int, Any, dict[str, str]]]
) -> None:
    for method, path in (
        ("GET", "/api/dashboard/runs"),
        ("POST", "/api/dashboard/runs/x/steps/a/approve"),
    ):
        status, body, headers = dashboard_api(
            method, path, claims=None, headers={"authorization": "Bearer forged"}
        )
        assert status == 401, body
        assert "sign in" in body["error"]["message"]
        assert headers.get("www-authenticate", "").startswith("Bearer")


def test_the_live_stream_is_refused_so_the_page_polls(
    board: DashboardStack, dashboard_api: Callable[..., tuple[int, Any, dict[str, str]]]
) -> None:
    status, body, _ = dashboard_api("GET", "/api/dashboard/live")
    assert status == 501
    assert body["error"]["code"] == "live_unavailable"
