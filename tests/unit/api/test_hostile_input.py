"""Input that PostgreSQL or Python cannot hold, sent to the REST API: NUL characters and lone
surrogates in bodies, ids and query strings, nesting deeper than `MAX_JSON_DEPTH`, numbers too
large for a double. Each is a 400 naming the problem (or a 404 for an id no run can have),
never a 500, and the server goes on answering."""

from __future__ import annotations

import socket

import httpx
import pytest

from switchyard.serving import MAX_JSON_DEPTH
from tests.unit.api.support import Stack

JSON = {"Content-Type": "application/json"}


def _start(stack: Stack, client: httpx.Client, body: bytes) -> httpx.Response:
    return client.post(
        "/workflows/noop/runs", content=body, headers={**JSON, **stack.script_header("noop")}
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"n": 1, "note": "a\\u0000b"}', "NUL character"),
        (b'{"n": 1, "a\\u0000": 1}', "NUL character"),
        (b'{"n": 1, "note": "\\ud800"}', "lone surrogate (\\ud800)"),
        (b'{"n": 1, "note": "\\udfff tail"}', "lone surrogate (\\udfff)"),
        (b'{"n": 1e400}', "too large"),
        (b'{"n": ' + b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1) + b"}", "deeper"),
        (b"[" * 100_000 + b"]" * 100_000, "deeper"),
        (b'{"n": "\xff\xfe"}', "not UTF-8"),
    ],
)
def test_a_body_postgresql_cannot_hold_is_400_invalid_json(
    stack: Stack, client: httpx.Client, body: bytes, problem: str
) -> None:
    answer = _start(stack, client, body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_json"
    assert problem in answer.json()["error"]["message"]


def test_a_valid_surrogate_pair_and_deep_but_allowed_nesting_are_held_faithfully(
    stack: Stack, client: httpx.Client
) -> None:
    deep = "[" * (MAX_JSON_DEPTH - 2) + "]" * (MAX_JSON_DEPTH - 2)
    answer = _start(stack, client, b'{"n": "\\ud83d\\ude00"}')  # an emoji, spelled as a pair
    assert answer.status_code == 400  # a string is not an integer: the input check answers
    assert answer.json()["error"]["code"] == "invalid_input"
    nested = _start(stack, client, f'{{"n": {deep}}}'.encode())
    assert nested.status_code == 400 and nested.json()["error"]["code"] == "invalid_input"


@pytest.mark.parametrize(
    "path",
    ["/runs/a%00b", "/runs/a%00b/cancel", "/runs/x/steps/a%00/approve", "/workflows/a%00b"],
)
def test_a_nul_in_an_id_is_400(client: httpx.Client, path: str) -> None:
    method = "POST" if path.endswith(("cancel", "approve")) else "GET"
    answer = client.request(method, path, headers={"X-Switchyard-User": "lee"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "bad_request"


@pytest.mark.parametrize("path", ["/runs/%ED%A0%80", "/runs/%FF%FE", "/workflows/%ED%A0%80"])
def test_bytes_that_are_not_utf8_in_an_id_name_no_run(client: httpx.Client, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 404, answer.text


@pytest.mark.parametrize(
    "query", ["workflow=a%00b", "status=%00", "limit=%00", "workflow=%ED%A0%80", "limit=1e400"]
)
def test_a_query_string_postgresql_cannot_hold_is_400_or_matches_nothing(
    client: httpx.Client, query: str
) -> None:
    answer = client.get(f"/runs?{query}")
    if "ED%A0" in query:
        assert answer.status_code == 200 and answer.json() == {"runs": []}
    else:
        assert answer.status_code == 400, answer.text


def test_a_nul_in_a_header_is_refused_by_the_http_parser(stack: Stack) -> None:
    host, port = stack.server.server_address
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(
            b"POST /workflows/noop/runs HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\x00b\r\n"
            b"Content-Length: 2\r\n\r\n{}"
        )
        answer = conn.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400")


def test_the_server_answers_normally_after_all_of_it(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"ok": True}
