"""What the routes of every router share: the context dependency, path, header and body
parameter types whose schemas say exactly what is accepted, the error answers each route
documents, and `PUBLIC`, which serves a route without the API token.

A router of another feature (the approval pages, the dashboard, webhooks) is a FastAPI
`APIRouter` whose handlers take `Context`; `create_app(..., routers=[router])` mounts it
(docs/api.md, "Adding routes")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Header, Path, Request

from switchyard.api.messages import read_json
from switchyard.api.models import ErrorAnswer

if TYPE_CHECKING:
    from switchyard.api.context import ApiContext

PUBLIC: dict[str, Any] = {"security": []}
"""`openapi_extra=PUBLIC` on a route: served without the API token (health checks, pages whose
links carry their own signature). Other routes need it when one is set."""

STORABLE = r"^[^\x00]+$"
"""A path segment or query value PostgreSQL can store: no NUL character."""


def context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.context
    return ctx


Context = Annotated["ApiContext", Depends(context)]
RunId = Annotated[
    str,
    Path(pattern=STORABLE, description="The run's id (its execution name) or execution ARN."),
]
WorkflowName = Annotated[str, Path(pattern=STORABLE, description="An installed workflow's name.")]
StepId = Annotated[str, Path(pattern=STORABLE, description="The step id of the gate.")]
Body = Annotated[Any, Depends(read_json)]
"""The request's JSON body (`NO_BODY` when there is none)."""

REVIEWER_HEADER = "X-Switchyard-User"
MISSING_REVIEWER = f"say who decides with the {REVIEWER_HEADER} header"
Reviewer = Annotated[
    str,
    Header(
        alias=REVIEWER_HEADER,
        pattern=r"\S",
        description="Who decides: recorded on the gate and checked against its role.",
    ),
]
"""Required: a request without it (or with only spaces) is `400 missing_reviewer` (the
validation handler of `switchyard.api.answers` names it so)."""


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route documents (all in the `{"error": {...}}` shape)."""
    return {status: {"model": ErrorAnswer, "description": _MEANING[status]} for status in statuses}


_MEANING = {
    400: "The request is malformed or invalid; `error.code` says how.",
    401: "The API token is missing or wrong.",
    403: "The person deciding may not decide this gate.",
    404: "No such workflow or run.",
    409: "The request conflicts with the run's state or an earlier request.",
    413: "The body is larger than the server reads.",
    415: "The body is not JSON.",
    503: "The engine or its database is unavailable; retry.",
}
