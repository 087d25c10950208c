"""The HTTP server of the REST API: the standard library's threading server (one thread per
connection, keep-alive), each request answered by `RestApi`. The same pattern as the Step
Functions endpoint (`switchyard.engine.api.server`).

Bodies are read by `Content-Length` (chunked bodies are refused with 411) up to `MAX_BODY`.
The log has the method, path, status and time of each request, never a header or a body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from psycopg_pool import ConnectionPool

from switchyard.api.app import RestApi, error_response
from switchyard.api.context import ApiContext
from switchyard.api.errors import (
    ApiError,
    BadRequestError,
    LengthRequiredError,
    PayloadTooLargeError,
)
from switchyard.api.messages import Request, Response
from switchyard.api.workflows import WorkflowCatalog, install_directory
from switchyard.engine.api.server import serving_in_thread
from switchyard.engine.engine import Engine

log = logging.getLogger("switchyard.api")

DEFAULT_PORT = 8080
MAX_BODY = 1024 * 1024
"""Bytes; a run's input is at most 256 KiB on Step Functions."""
IDLE_SECONDS = 120
"""A keep-alive connection idle this long is closed (each holds a thread)."""


class RestApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: RestApi) -> None:
        self.api = api
        super().__init__(address, _RequestHandler)

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), int(self.server_address[1])
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
        return f"http://{f'[{shown}]' if ':' in shown else shown}:{port}"

    def server_close(self) -> None:
        super().server_close()
        self.api.close()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stall
    timeout = IDLE_SECONDS
    server: RestApiServer

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_OPTIONS(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        started = time.perf_counter()
        try:
            request = self._request()
        except ApiError as error:
            self.close_connection = True  # the body was not read: the stream is out of step
            response = error_response(error)
        else:
            response = self.server.api.handle(request)
        self._send(response)
        log.debug(
            "%s %s %d %.1f ms",
            self.command,
            urlsplit(self.path).path,
            response.status,
            (time.perf_counter() - started) * 1000,
        )

    def _request(self) -> Request:
        url = urlsplit(self.path)
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise LengthRequiredError("send the body with a Content-Length, not chunked")
        raw = self.headers.get("Content-Length") or "0"
        if not raw.isdigit():
            raise BadRequestError(f"Content-Length must be a number of bytes, not {raw!r}")
        length = int(raw)
        if length > MAX_BODY:
            raise PayloadTooLargeError(f"the body is {length} bytes; at most {MAX_BODY} are read")
        body = self.rfile.read(length) if length else b""
        return Request(
            method=self.command,
            path=url.path,
            query=parse_qs(url.query, keep_blank_values=True),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What the standard library answers by itself (a malformed request line, headers too
        long, a method no route could have) is JSON too."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        error = ApiError(message or phrase, code=phrase.lower().replace(" ", "_").replace("-", "_"))
        error.status = code
        self.close_connection = True
        self._send(error_response(error))

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", f"{response.content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in response.headers.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # _serve logs each request (without its query string); errors go to the log too

    def log_error(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def serve_rest_api(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    workflows_dir: Path | None = None,
    token: str | None = None,
    report: Callable[[str], None] | None = None,
) -> RestApiServer:
    """Install the workflows of `workflows_dir` into a started engine and bind the REST API;
    the caller runs `serve_forever()` and, to stop, `shutdown()` then `server_close()`. Port 0
    takes a free port. `token`: the bearer token every request but `/healthz` must carry."""
    catalog = WorkflowCatalog()
    if workflows_dir is not None:
        with engine.read() as store:
            if report is None:
                catalog = install_directory(store, engine.arns, workflows_dir)
            else:
                catalog = install_directory(store, engine.arns, workflows_dir, report=report)
    pool = ConnectionPool(
        engine.conninfo,
        min_size=1,
        max_size=8,
        open=True,
        kwargs={"autocommit": True},
        name="switchyard-rest-api",
    )
    api = RestApi(ApiContext(engine, pool, catalog), token=token)
    try:
        return RestApiServer((host, port), api)
    except BaseException:
        api.close()
        raise


@contextmanager
def rest_api_in_thread(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    workflows_dir: Path | None = None,
    token: str | None = None,
    report: Callable[[str], None] | None = None,
) -> Iterator[RestApiServer]:
    """The API served from a background thread while the block runs (tests, notebooks)."""
    server = serve_rest_api(
        engine, host, port, workflows_dir=workflows_dir, token=token, report=report
    )
    with serving_in_thread(server, "switchyard-rest-api") as serving:
        yield serving
