"""The REST API as a FastAPI app: the routers of the API (workflows, runs, the operators' gate
decisions, resume and cancel) and of any other feature, the token check, and every error as
`{"error": {"code", "message"}}` (`switchyard.api.answers`).

    app = create_app(context, token="s3cret", routers=[approvals.router])

`/openapi.json` is generated from the routes and their models.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from switchyard.api import operators, runs, workflows
from switchyard.api.answers import error_body, error_response, with_api_errors
from switchyard.api.auth import BearerToken
from switchyard.api.context import ApiContext
from switchyard.api.document import openapi_document
from switchyard.api.errors import UnavailableError
from switchyard.api.messages import json_response
from switchyard.api.models import Health
from switchyard.api.routing import PUBLIC

__all__ = [
    "API_ROUTERS",
    "OPENAPI_PATH",
    "create_app",
    "error_body",
    "error_response",
    "with_api_errors",
]

API_ROUTERS: tuple[APIRouter, ...] = (workflows.router, runs.router, operators.router)
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
    operators.serve(app, context.operations)
    for router in (health_router, *API_ROUTERS, *routers):
        app.include_router(router)
    app.openapi = openapi_document(app, context, bearer)  # type: ignore[method-assign]
    return with_api_errors(app, bearer)


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
