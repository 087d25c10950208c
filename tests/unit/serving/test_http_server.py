"""What a hostile client can do to a server of `switchyard.serving`, against a real uvicorn on a
free port: bodies too large (declared or streamed), bodies and headers that stall, malformed
request lines, a `Content-Length` that is not a number, methods no route has, and hundreds of
connections at once. Every one gets a status line and a JSON answer, and the server goes on."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI, Request

from switchyard.serving import HttpServer, Limits, serving_in_thread

LIMITS = Limits(max_body=64 * 1024, header_seconds=0.5, body_seconds=0.5, keep_alive_seconds=5)


def _error_body(status: int, code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def _app() -> FastAPI:
    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    @app.get("/slow")
    def slow() -> dict[str, bool]:
        time.sleep(0.05)  # holds a worker thread, as a database read does
        return {"ok": True}

    return app


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    bound = HttpServer(_app(), "127.0.0.1", 0, limits=LIMITS, error_body=_error_body)
    with serving_in_thread(bound, "test-http-server") as serving:
        yield serving


def _connect(server: HttpServer) -> socket.socket:
    return socket.create_connection(server.server_address, timeout=10)


def _read_all(conn: socket.socket) -> bytes:
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _body(answer: bytes) -> dict[str, object]:
    body: dict[str, object] = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    return body


def test_a_body_within_the_limit_is_read_whole(server: HttpServer) -> None:
    answer = httpx.post(f"{server.url}/echo", content=b"x" * 60_000)
    assert answer.status_code == 200 and answer.json() == {"bytes": 60_000}


def test_a_400_mb_body_is_413_before_any_of_it_is_read(server: HttpServer) -> None:
    with _connect(server) as conn:
        conn.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 419430400\r\n\r\n" + b"x" * 1024
        )
        # the answer comes while 400 MB are still unsent: the server did not wait for them
        answer = _read_all(conn)
    assert _status(answer) == 413
    assert b"connection: close" in answer.lower()
    assert _body(answer)["error"] == {
        "code": "payload_too_large",
        "message": "the body is 419430400 bytes; at most 65536 are read",
    }


def test_a_chunked_body_is_counted_and_cut_off_at_the_limit(server: HttpServer) -> None:
    chunk = b"x" * 16384
    with _connect(server) as conn:
        conn.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(5):  # 80 KiB, no length declared, and the body not ended
            conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = _read_all(conn)
    assert _status(answer) == 413
    assert _body(answer)["error"]["code"] == "payload_too_large"  # type: ignore[index]


def test_a_stalled_body_is_cut_off_at_its_deadline(server: HttpServer) -> None:
    with _connect(server) as conn:
        conn.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        started = time.monotonic()
        answer = _read_all(conn)
    assert _status(answer) == 408
    assert _body(answer)["error"]["code"] == "request_timeout"  # type: ignore[index]
    assert time.monotonic() - started < 5


def test_headers_that_trickle_in_are_cut_off_at_their_deadline(server: HttpServer) -> None:
    with _connect(server) as conn:
        conn.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n")
        for _ in range(3):  # a byte now and then keeps a naive server waiting for ever
            time.sleep(0.2)
            try:
                conn.sendall(b"X")
            except OSError:
                break
        answer = _read_all(conn)
    assert _status(answer) == 408


def test_a_connection_that_never_sends_is_closed(server: HttpServer) -> None:
    with _connect(server) as conn:
        assert _read_all(conn) == b""  # closed after the header deadline, nothing to answer


@pytest.mark.parametrize(
    "request_line",
    [
        b"GET /slow HTTP/9\r\n\r\n",
        b"\x00\x01\x02 garbage\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET /slow HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ],
)
def test_a_malformed_request_gets_a_status_line_and_json(
    server: HttpServer, request_line: bytes
) -> None:
    with _connect(server) as conn:
        conn.sendall(request_line)
        answer = _read_all(conn)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert _body(answer)["error"]["code"] == "bad_request"  # type: ignore[index]


def test_a_content_length_that_is_not_a_number_is_400(server: HttpServer) -> None:
    with _connect(server) as conn:
        conn.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}")
        answer = _read_all(conn)
    assert _status(answer) == 400


def test_headers_over_the_limit_are_431_however_they_arrive(server: HttpServer) -> None:
    head = b"GET /slow HTTP/1.1\r\nHost: x\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n"
    with _connect(server) as conn:
        conn.sendall(head)
        answer = _read_all(conn)
    assert _status(answer) == 431


def test_a_method_the_path_has_not_is_the_apps_to_answer(server: HttpServer) -> None:
    answer = httpx.request("BREW", f"{server.url}/slow")
    assert answer.status_code == 405


def test_keep_alive_serves_many_requests_on_one_connection(server: HttpServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        for _ in range(20):
            assert client.get("/slow").status_code == 200
        assert client.post("/echo", content=b"{}").status_code == 200


def test_400_simultaneous_connections_are_all_answered(server: HttpServer) -> None:
    connections = [_connect(server) for _ in range(400)]
    try:
        for conn in connections:  # every one connected before any is answered
            conn.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers: list[bytes] = [b""] * len(connections)

        def read(index: int) -> None:
            answers[index] = _read_all(connections[index])

        readers = [threading.Thread(target=read, args=(i,)) for i in range(len(connections))]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout=60)
    finally:
        for conn in connections:
            conn.close()
    assert [_status(answer) for answer in answers] == [200] * 400


def test_the_listening_socket_is_tcp_so_connections_get_tcp_nodelay(server: HttpServer) -> None:
    # asyncio disables Nagle only on sockets whose proto is TCP; without it each answer's body
    # waits 40 ms for the delayed ACK of its headers (benchmarks/api.py measured it)
    assert server.socket.proto == socket.IPPROTO_TCP
