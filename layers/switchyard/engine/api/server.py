"""The HTTP server of the Step Functions endpoint: a FastAPI app with one route, `POST /`, served
by uvicorn (`switchyard.serving`), each call answered by `SfnApi` in a worker thread (reads on
the engine's pooled connections, writes through its coordinator).

With SigV4 credentials configured (`SigV4Credentials`, from SWITCHYARD_SFN_ACCESS_KEY_ID and
SWITCHYARD_SFN_SECRET_ACCESS_KEY), every call must be signed with them; without, the endpoint
binds only a loopback address. Bodies are at most `SFN_LIMITS.max_body` bytes (a state machine
definition is at most 1 MiB, and JSON-escaped inside the call's body)."""

from __future__ import annotations

import ipaddress
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from switchyard.engine.api import wire
from switchyard.engine.api.protocol import CONTENT_TYPE, SfnApi
from switchyard.engine.api.sigv4 import SignedRequest, SigV4Credentials, verify
from switchyard.engine.engine import Engine
from switchyard.engine.errors import EngineError
from switchyard.serving import HttpServer, Limits, serving_in_thread

log = logging.getLogger(__name__)

DEFAULT_SFN_PORT = 8083
SFN_LIMITS = Limits(max_body=4 * 1024 * 1024)

_HTTP_ERRORS = {
    400: "SerializationException",
    404: "UnknownOperationException",
    405: "UnknownOperationException",
    408: "RequestTimeoutException",
    413: "RequestEntityTooLargeException",
    431: "SerializationException",
    501: "UnknownOperationException",
}


def error_body(status: int, code: str, message: str) -> bytes:
    """An answer of the HTTP layer in the JSON protocol's error shape."""
    return wire.encode({"__type": _HTTP_ERRORS.get(status, "InternalFailure"), "message": message})


def create_sfn_app(api: SfnApi, *, credentials: SigV4Credentials | None = None) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, redirect_slashes=False)

    @app.post("/")
    async def call(request: Request) -> Response:
        body = await request.body()  # bounded: the server read it whole, up to its limit
        if credentials is not None:
            try:
                verify(_signed(request, body), credentials)
            except EngineError as error:
                return _answer(
                    error.status, wire.encode({"__type": error.code, "message": error.message})
                )
        target = request.headers.get("x-amz-target", "")
        status, payload = await run_in_threadpool(api.call, target, body)
        return _answer(status, payload)

    @app.exception_handler(HTTPException)
    def http_error(request: Request, error: HTTPException) -> Response:
        message = f"{request.method} {request.url.path}: {HTTPStatus(error.status_code).phrase}"
        return _answer(error.status_code, error_body(error.status_code, "", message))

    return app


def _signed(request: Request, body: bytes) -> SignedRequest:
    return SignedRequest(
        method=request.method,
        scheme=request.url.scheme,
        path=request.scope.get("raw_path", b"/").decode("latin-1") or "/",
        query=request.scope.get("query_string", b"").decode("latin-1"),
        headers={name.lower(): value for name, value in request.headers.items()},
        body=body,
    )


def _answer(status: int, payload: bytes) -> Response:
    return Response(
        payload,
        status_code=status,
        media_type=CONTENT_TYPE,
        headers={"x-amzn-RequestId": str(uuid.uuid4())},
    )


class SfnApiServer(HttpServer):
    def __init__(
        self,
        address: tuple[str, int],
        engine: Engine,
        *,
        credentials: SigV4Credentials | None = None,
        limits: Limits = SFN_LIMITS,
    ) -> None:
        host, port = address
        if credentials is None and not _loopback(host):
            raise ValueError(
                f"the Step Functions endpoint binds {host} only with SigV4 credentials set"
                " (SWITCHYARD_SFN_ACCESS_KEY_ID and SWITCHYARD_SFN_SECRET_ACCESS_KEY)"
            )
        self.api = SfnApi(engine)
        self.credentials = credentials
        app = create_sfn_app(self.api, credentials=credentials)
        super().__init__(app, host, port, limits=limits, error_body=error_body)

    @property
    def endpoint_url(self) -> str:
        """What to give boto3 as `endpoint_url` and the AWS CLI as `--endpoint-url`."""
        return self.url


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_sfn_api(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = DEFAULT_SFN_PORT,
    *,
    credentials: SigV4Credentials | None = None,
    from_env: bool = True,
) -> SfnApiServer:
    """Bind the Step Functions endpoint of a started engine; the caller runs `serve_forever()`
    and, to stop, `shutdown()` then `server_close()`. Port 0 takes a free port. Without
    `credentials`, those of the environment apply (`from_env=False`: none)."""
    if credentials is None and from_env:
        credentials = SigV4Credentials.from_env()
    return SfnApiServer((host, port), engine, credentials=credentials)


@contextmanager
def sfn_api_in_thread(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    credentials: SigV4Credentials | None = None,
    from_env: bool = True,
) -> Iterator[SfnApiServer]:
    """The endpoint served from a background thread while the block runs (tests, notebooks)."""
    server = serve_sfn_api(engine, host, port, credentials=credentials, from_env=from_env)
    with serving_in_thread(server, "switchyard-sfn-api") as serving:
        yield serving


__all__ = [
    "DEFAULT_SFN_PORT",
    "SFN_LIMITS",
    "SfnApiServer",
    "create_sfn_app",
    "serve_sfn_api",
    "serving_in_thread",
    "sfn_api_in_thread",
]
