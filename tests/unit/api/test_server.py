"""The HTTP side: health, unknown routes and methods, bodies that are not JSON, errors as JSON
without tracebacks, the bearer token, and task tokens that never leave the server."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest
from fastapi import APIRouter

from switchyard.api import Context, create_app, rest_api_in_thread
from switchyard.api.aws import lambda_handler
from tests.unit.api.support import CUSTOMER_SUPPORT_INPUT, Stack, start, wait_for

TOKEN = "s3cret-token"


def test_healthz(client: httpx.Client) -> None:
    answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json() == {"ok": True}
    assert answer.headers["content-type"].startswith("application/json")


def test_an_unknown_route_is_404_and_a_wrong_method_405(client: httpx.Client) -> None:
    unknown = client.get("/nope")
    wrong_method = client.delete("/runs")

    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "not_found"
    assert wrong_method.status_code == 405
    assert wrong_method.headers["Allow"] == "GET"
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"


def test_head_answers_headers_only_and_other_methods_are_json_errors(
    stack: Stack, client: httpx.Client
) -> None:
    head = client.head("/healthz")
    assert head.status_code == 200 and head.content == b""
    assert client.request("OPTIONS", "/runs").status_code == 405
    traced = client.request("TRACE", "/runs")
    assert traced.status_code == 405 and traced.headers["Allow"] == "GET"
    made_up = client.request("BREW", "/runs")
    assert made_up.status_code == 405 and made_up.json()["error"]["code"] == "method_not_allowed"


def test_what_the_http_server_refuses_itself_is_json_too(stack: Stack) -> None:
    bad_version = _raw(stack, b"GET /runs HTTP/9\r\n\r\n")
    long_header = _raw(stack, b"GET /runs HTTP/1.1\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n")

    assert bad_version.startswith("HTTP/1.1 400")  # a status line, then the JSON
    assert '{"error": {"code": "bad_request"' in bad_version
    assert long_header.startswith("HTTP/1.1 431")
    assert '{"error": {"code": "request_header_fields_too_large"' in long_header


def _raw(stack: Stack, request: bytes) -> str:
    host, port = stack.server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=5) as conn:
        conn.sendall(request)
        received = b""
        while chunk := conn.recv(4096):  # the server closes the connection after its answer
            received += chunk
    return received.decode()


def test_a_body_that_is_not_json_is_400_naming_the_problem(client: httpx.Client) -> None:
    answer = client.post(
        "/workflows/noop/runs", content=b'{"n": 1,}', headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_json"
    assert "the body is not JSON" in error["message"] and "line 1 column 9" in error["message"]
    nan = client.post(
        "/workflows/noop/runs", content=b'{"n": NaN}', headers={"Content-Type": "application/json"}
    )
    assert nan.status_code == 400 and "NaN is not a JSON value" in nan.text


def test_a_body_of_another_media_type_is_415(client: httpx.Client) -> None:
    answer = client.post("/workflows/noop/runs", data={"n": "1"})
    assert answer.status_code == 415
    assert answer.json()["error"]["code"] == "unsupported_media_type"


def test_a_body_too_large_is_413_and_the_connection_closed(stack: Stack) -> None:
    answer = _raw(
        stack,
        b"POST /workflows/noop/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 99999999\r\n\r\n{",
    )
    assert answer.startswith("HTTP/1.1 413")
    assert "connection: close" in answer.lower() and "payload_too_large" in answer


def test_an_unexpected_failure_is_500_without_a_traceback(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    router = APIRouter()

    @router.get("/boom")
    def boom(api: Context) -> None:
        raise RuntimeError("secret internals")

    with rest_api_in_thread(stack.engine, routers=[router]) as server:
        answer = httpx.get(f"{server.url}/boom")

    assert answer.status_code == 500
    assert "secret internals" not in answer.text and "Traceback" not in answer.text
    assert answer.json()["error"]["code"] == "internal"
    assert "secret internals" in caplog.text  # the server's log has it


@pytest.fixture(scope="module")
def guarded(stack: Stack) -> Iterator[str]:
    """A second server on the same engine that needs a bearer token."""
    with rest_api_in_thread(stack.engine, token=TOKEN) as server:
        yield server.url


def test_with_a_token_set_every_request_but_healthz_needs_it(guarded: str) -> None:
    with httpx.Client(base_url=guarded) as anonymous:
        assert anonymous.get("/healthz").status_code == 200
        for path in ("/runs", "/workflows", "/nope"):
            refused = anonymous.get(path)
            assert refused.status_code == 401, path
            assert refused.json()["error"]["code"] == "unauthorized"
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        for wrong in ("Bearer nope", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"):
            assert anonymous.get("/runs", headers={"Authorization": wrong}).status_code == 401
    with httpx.Client(base_url=guarded, headers={"Authorization": f"Bearer {TOKEN}"}) as allowed:
        assert allowed.get("/runs").status_code == 200
        assert allowed.get("/nope").status_code == 404


def test_task_tokens_never_appear_in_a_response(stack: Stack, client: httpx.Client) -> None:
    run_id = start(client, stack, "customer-support", CUSTOMER_SUPPORT_INPUT).json()["run_id"]
    wait_for(client, run_id, {"waiting"})
    with psycopg.connect(stack.engine.conninfo) as conn:
        tokens = [row[0] for row in conn.execute("SELECT token FROM gates").fetchall()]
        tokens += [row[0] for row in conn.execute("SELECT token FROM sfn_task_tokens").fetchall()]
    assert tokens

    answers = [client.get(f"/runs/{run_id}"), client.get("/runs", params={"limit": 500})]
    answers.append(
        client.post(f"/runs/{run_id}/steps/approve/approve", headers={"X-Switchyard-User": "lead"})
    )
    answers.append(client.get(f"/runs/{run_id}"))

    for answer in answers:
        assert answer.status_code == 200
        assert not any(token in answer.text for token in tokens)


def test_the_same_app_serves_a_lambda_event_through_mangum(stack: Stack) -> None:
    app = create_app(stack.server.context)
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/workflows/noop",
        "rawQueryString": "",
        "headers": {"host": "api.example.com"},
        "requestContext": {
            "http": {"method": "GET", "path": "/workflows/noop", "sourceIp": "192.0.2.1"},
            "requestId": "r-1",
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }

    answer = lambda_handler(app)(event, {})

    assert answer["statusCode"] == 200
    assert json.loads(answer["body"])["name"] == "noop"


def test_the_request_log_has_method_path_status_and_time_and_no_query_or_header(
    client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="switchyard.api"):
        client.get("/runs", params={"workflow": "secret-query"}, headers={"X-Secret": "h3ader"})
        # the server thread logs after the response has gone out: wait for the line
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            lines = [r.getMessage() for r in caplog.records if r.name == "switchyard.api"]
            if any(line.startswith("GET /runs 200 ") for line in lines):
                break
            time.sleep(0.01)
    assert any(line.startswith("GET /runs 200 ") and line.endswith(" ms") for line in lines)
    assert "secret-query" not in caplog.text and "h3ader" not in caplog.text
