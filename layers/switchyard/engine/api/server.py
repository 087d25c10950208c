"""The HTTP server of the Step Functions endpoint: the standard library's threading server, one
thread per connection, each call answered by `SfnApi` (reads on the engine's pooled connections,
writes through its coordinator)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from switchyard.engine.api.protocol import CONTENT_TYPE, SfnApi
from switchyard.engine.engine import Engine

log = logging.getLogger(__name__)

DEFAULT_SFN_PORT = 8083


_Server = TypeVar("_Server", bound=ThreadingHTTPServer)


class SfnApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], engine: Engine) -> None:
        self.api = SfnApi(engine)
        super().__init__(address, _CallHandler)

    @property
    def endpoint_url(self) -> str:
        """What to give boto3 as `endpoint_url` and the AWS CLI as `--endpoint-url`."""
        host, port = str(self.server_address[0]), int(self.server_address[1])
        return f"http://{'127.0.0.1' if host in ('', '0.0.0.0') else host}:{port}"


class _CallHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: botocore reuses its connections
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stall
    server: SfnApiServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        status, payload = self.server.api.call(self.headers.get("X-Amz-Target", ""), body)
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def serve_sfn_api(
    engine: Engine, host: str = "127.0.0.1", port: int = DEFAULT_SFN_PORT
) -> SfnApiServer:
    """Bind the Step Functions endpoint of a started engine; the caller runs `serve_forever()`
    and, to stop, `shutdown()` then `server_close()`. Port 0 takes a free port."""
    return SfnApiServer((host, port), engine)


@contextmanager
def sfn_api_in_thread(
    engine: Engine, host: str = "127.0.0.1", port: int = 0
) -> Iterator[SfnApiServer]:
    """The endpoint served from a background thread while the block runs (tests, notebooks)."""
    with serving_in_thread(serve_sfn_api(engine, host, port), "switchyard-sfn-api") as server:
        yield server


@contextmanager
def serving_in_thread(server: _Server, name: str) -> Iterator[_Server]:
    """`server` answering from a daemon thread while the block runs; shut down and closed after."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=name, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
