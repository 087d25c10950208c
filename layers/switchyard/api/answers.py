"""Every error as `{"error": {"code", "message"}}`, and the API's path rules: the exception
handlers and the middleware that the REST API (`create_app`) and the apps serving some of its
routers on Lambda (approval_api, dashboard_api) install with `with_api_errors(app)`.

An `ApiError` answers its status and code; an engine error by its kind; a request FastAPI cannot
validate `400 bad_request`; anything unexpected `500 internal`, whose traceback goes to the
server's log, never to the client. Nothing here needs the engine or the HTTP server: it loads on
Lambda.
"""

from __future__ import annotations

import logging
import re
import time
from http import HTTPStatus
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from switchyard.api.auth import BearerToken
from switchyard.api.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    InternalError,
    NotFoundError,
    UnavailableError,
)
from switchyard.api.messages import encode, json_response
from switchyard.api.routing import MISSING_REVIEWER, REVIEWER_HEADER
from switchyard.engine.errors import EngineError

log = logging.getLogger("switchyard.api")


def with_api_errors(app: FastAPI, bearer: BearerToken | None = None) -> FastAPI:
    """Answer `app`'s errors as the REST API does (`{"error": {"code", "message"}}`, no
    traceback), with its path rules; `bearer`: the token a request lacking one is told of (its
    404 or 405 is that 401)."""
    app.state.bearer = bearer or BearerToken(None)
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(EngineError, _engine_error)  # type: ignore[arg-type]
    app.add_exception_handler(TimeoutError, _timeout)
    app.add_exception_handler(psycopg.OperationalError, _database_down)
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_middleware(_Unexpected)
    app.add_middleware(_Normalized)
    return app


def error_response(error: ApiError) -> Response:
    return json_response(error.status, error.body(), error.headers)


def error_body(status: int, code: str, message: str) -> bytes:
    """What the HTTP layer answers before a route runs, in the API's error shape."""
    return encode({"error": {"code": code, "message": message}})


def _api_error(request: Request, error: ApiError) -> Response:
    return error_response(error)


def _engine_error(request: Request, error: EngineError) -> Response:
    code = re.sub(r"(?<!^)(?=[A-Z])", "_", error.code).lower()  # ExecutionAlreadyExists → ...
    if error.code == "ExecutionAlreadyExists":
        return error_response(ConflictError(error.message, code=code))
    if error.code.endswith("DoesNotExist"):
        return error_response(NotFoundError(error.message, code=code))
    return error_response(ApiError(error.message, code=code))


def _timeout(request: Request, error: Exception) -> Response:
    return error_response(UnavailableError("the engine did not answer in time; retry"))


def _database_down(request: Request, error: Exception) -> Response:
    # the database is down, or every connection is busy
    log.warning("%s %s: the database is unavailable", request.method, request.url.path)
    return error_response(UnavailableError("the database is unavailable; retry"))


def _invalid(request: Request, error: RequestValidationError) -> Response:
    problems: list[str] = []
    for item in error.errors():
        where, *rest = item["loc"]
        name = ".".join(str(part) for part in rest)
        if where == "header" and name.lower() == REVIEWER_HEADER.lower():
            return error_response(BadRequestError(MISSING_REVIEWER, code="missing_reviewer"))
        given = item.get("input")
        shown = f", not {given!r}" if isinstance(given, str | int | float) else ""
        problems.append(f"the {where} parameter '{name}': {item['msg']}{shown}")
    return error_response(BadRequestError("; ".join(problems) or "invalid request"))


def _http_error(request: Request, error: HTTPException) -> Response:
    """Starlette's own answers (no route, a method the path has not) in the API's shape; with a
    token set, a request without it learns nothing of which paths exist."""
    bearer = getattr(request.app.state, "bearer", None)
    authorization = request.headers.get("authorization")
    if error.status_code in (404, 405) and bearer is not None and not bearer.allows(authorization):
        try:
            bearer.check(authorization)
        except ApiError as refused:
            return error_response(refused)
    path = request.url.path.rstrip("/") or "/"
    default = error.detail == HTTPStatus(error.status_code).phrase
    if error.status_code == 404:
        message = f"no such endpoint: {path} (docs/api.md lists them)" if default else error.detail
        return error_response(NotFoundError(message))
    if error.status_code == 405:
        methods = (error.headers or {}).get("Allow", "").replace(" ", "").split(",")
        allow = ", ".join(sorted(set(methods) - {"HEAD", ""}))
        api_error = ApiError(
            f"{request.method} is not allowed on {path} (allowed: {allow})",
            code="method_not_allowed",
            headers={"Allow": allow},
        )
        api_error.status = 405
        return error_response(api_error)
    phrase = HTTPStatus(error.status_code).phrase
    api_error = ApiError(str(error.detail), code=phrase.lower().replace(" ", "_").replace("-", "_"))
    api_error.status = error.status_code
    return error_response(api_error)


class _Unexpected:
    """Anything no handler answered: 500 with no detail; the traceback goes to the log. Each
    request is logged at DEBUG with its method, path, status and time: never a header, a query
    string or a body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_at = time.perf_counter()
        status = 0

        async def tracked(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("%s %s failed", scope["method"], scope["path"])
            if status:
                raise
            status = 500
            response = error_response(InternalError("the server failed to answer; see its log"))
            await response(scope, receive, send)
        finally:
            elapsed = (time.perf_counter() - started_at) * 1000
            log.debug("%s %s %d %.1f ms", scope["method"], scope["path"], status, elapsed)


class _Normalized:
    """`/runs/` is `/runs`, as the API has always answered (no redirect); `HEAD` is answered as
    `GET` (the HTTP server sends the headers only)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path, method = scope["path"], scope["method"]
            if len(path) > 1 and path.endswith("/"):
                path = path.rstrip("/") or "/"
            scope = {**scope, "path": path, "method": "GET" if method == "HEAD" else method}
        await self.app(scope, receive, send)
