"""The REST API apart from any HTTP server: routes, the token check, and errors as JSON.

`RestApi.handle(request)` always answers: an `ApiError` as its status and
`{"error": {"code", "message"}}`, an engine error by its kind, anything unexpected as a 500
whose traceback goes to the server's log, never to the client."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import replace

import psycopg

from switchyard.api import gates, runs, workflows
from switchyard.api.auth import BearerToken
from switchyard.api.context import ApiContext
from switchyard.api.errors import (
    ApiError,
    ConflictError,
    InternalError,
    NotFoundError,
    UnavailableError,
)
from switchyard.api.messages import Request, Response, json_response
from switchyard.api.routing import Route, Router
from switchyard.engine.errors import EngineError

log = logging.getLogger("switchyard.api")


def healthz(api: ApiContext, request: Request) -> Response:
    return json_response(200, {"ok": True})


ROUTES: list[Route] = [
    Route("GET", "/healthz", healthz, public=True),
    *workflows.ROUTES,
    *runs.ROUTES,
    *gates.ROUTES,
]


class RestApi:
    """Answers requests from one context; safe to call from many threads."""

    def __init__(
        self, context: ApiContext, *, token: str | None = None, routes: Iterable[Route] = ROUTES
    ) -> None:
        self.context = context
        self.token = BearerToken(token)
        self.router = Router(routes)

    def add_route(self, route: Route) -> None:
        """More pages on the same server (the approval pages and dashboard arrive this way)."""
        self.router.add(route)

    def handle(self, request: Request) -> Response:
        try:
            if not self.router.public(request.path):
                self.token.check(request.header("authorization"))
            route, params = self.router.match(request.method, request.path)
            return route.handler(self.context, replace(request, params=params))
        except ApiError as error:
            return error_response(error)
        except EngineError as error:
            return error_response(_engine_error(error))
        except TimeoutError:
            return error_response(UnavailableError("the engine did not answer in time; retry"))
        except psycopg.OperationalError:  # the database is down, or every connection is busy
            log.warning("%s %s: the database is unavailable", request.method, request.path)
            return error_response(UnavailableError("the database is unavailable; retry"))
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            return error_response(InternalError("the server failed to answer; see its log"))

    def close(self) -> None:
        self.context.close()


def error_response(error: ApiError) -> Response:
    return json_response(error.status, error.body(), error.headers)


def _engine_error(error: EngineError) -> ApiError:
    code = re.sub(r"(?<!^)(?=[A-Z])", "_", error.code).lower()  # ExecutionAlreadyExists → ...
    if error.code == "ExecutionAlreadyExists":
        return ConflictError(error.message, code=code)
    if error.code.endswith("DoesNotExist"):
        return NotFoundError(error.message, code=code)
    return ApiError(error.message, code=code)
