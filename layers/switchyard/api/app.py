"""The REST API as a FastAPI app: the routers of the API (workflows, runs, gates) and of any other
feature, the token check, and every error as `{"error": {"code", "message"}}`.

    app = create_app(context, token="s3cret", routers=[approvals.router])

An `ApiError` answers its status and code; an engine error by its kind; a request FastAPI cannot
validate `400 bad_request`; anything unexpected `500 internal`, whose traceback goes to the
server's log, never to the client. `/openapi.json` is generated from the routes and their models.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

import psycopg
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from switchyard.api import gates, runs, workflows
from switchyard.api.auth import BearerToken
from switchyard.api.context import ApiContext
from switchyard.api.document import openapi_document
from switchyard.api.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    InternalError,
    NotFoundError,
    UnavailableError,
)
from switchyard.api.messages import encode, json_response
from switchyard.api.models import Health
from switchyard.api.routing import PUBLIC
from switchyard.engine.errors import EngineError

log = logging.getLogger("switchyard.api")

API_ROUTERS: tuple[APIRouter, ...] = (workflows.router, runs.router, gates.router)
"""The REST API's own routers (the docs' endpoint table lists their routes)."""
OPENAPI_PATH = "/openapi.json"

health_router = APIRouter(tags=["health"])


@health_router.get(
    "/healthz",
    response_model=Health,
    responses={503: {"model": Health, "description": "The engine cannot commit; retry."}},
    openapi_extra=PUBLIC,
)
def healthz(request: Request) -> Response:
    """200 while the engine can commit to its database, else 503 (no token needed)."""
    context: ApiContext = request.app.state.context
    if context.healthy():
        return json_response(200, {"ok": True})
    error = UnavailableError("the engine cannot commit to its database; retry")
    return json_response(503, {"ok": False, **error.body()})


def create_app(
    context: ApiContext,
    *,
    token: str | None = None,
    routers: Iterable[APIRouter] = (),
    title: str = "switchyard REST API",
) -> FastAPI:
    """The REST API on `context`, with `routers` (other features' pages and endpoints) mounted
    beside its own. Their handlers get the context with the `switchyard.api.routing.Context`
    dependency; a route with `openapi_extra=PUBLIC` is served without the token."""
    app = FastAPI(
        dependencies=[Depends(_require_token)],
        title=title,
        version="1",
        openapi_url=OPENAPI_PATH,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
    )
    app.state.context = context
    bearer = BearerToken(token)
    for router in (health_router, *API_ROUTERS, *routers):
        app.include_router(router)
    app.openapi = openapi_document(app, context, bearer)  # type: ignore[method-assign]
    return with_api_errors(app, bearer)


def with_api_errors(app: FastAPI, bearer: BearerToken | None = None) -> FastAPI:
    """Answer `app`'s errors as the REST API does (`{"error": {"code", "message"}}`, no
    traceback), with its path rules; `bearer`: the token a request lacking one is told of.
    `create_app` does this; so does an app serving some of the API's routers elsewhere (the
    dashboard's data API on Lambda)."""
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


# --- errors -----------------------------------------------------------------------------------


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
        if where == "header" and name.lower() == runs.REVIEWER_HEADER.lower():
            return error_response(BadRequestError(gates.MISSING_REVIEWER, code="missing_reviewer"))
        given = item.get("input")
        shown = f", not {given!r}" if isinstance(given, str | int | float) else ""
        problems.append(f"the {where} parameter '{name}': {item['msg']}{shown}")
    return error_response(BadRequestError("; ".join(problems) or "invalid request"))


def _http_error(request: Request, error: HTTPException) -> Response:
    """Starlette's own answers (no route, a method the path has not) in the API's shape; with a
    token set, a request without it learns nothing of which paths exist."""
    bearer: BearerToken = request.app.state.bearer
    if error.status_code in (404, 405) and not bearer.allows(request.headers.get("authorization")):
        try:
            bearer.check(request.headers.get("authorization"))
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


# --- the token --------------------------------------------------------------------------------


def _require_token(request: Request) -> None:
    """With a token set, every route needs it but those marked `PUBLIC` (`/openapi.json` is no
    API route, and public too)."""
    route = request.scope.get("route")
    if isinstance(route, APIRoute) and _is_public(route):
        return
    bearer: BearerToken = request.app.state.bearer
    bearer.check(request.headers.get("authorization"))


def _is_public(route: APIRoute) -> bool:
    return (route.openapi_extra or {}).get("security") == []


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
