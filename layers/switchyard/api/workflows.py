"""The installed workflows (`switchyard.api.catalog`), as the API lists them: `GET /workflows`
(name, version, inputs of each) and `GET /workflows/{name}` (one of them: its latest version, or
`?version=N`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from switchyard.api.catalog import CatalogEntry
from switchyard.api.context import ApiContext
from switchyard.api.errors import NotFoundError
from switchyard.api.messages import check_query, json_response
from switchyard.api.models import WorkflowDescription, WorkflowList
from switchyard.api.routing import Context, WorkflowName, errors

router = APIRouter(tags=["workflows"])

Version = Annotated[
    int | None, Query(ge=1, description="A version of the workflow; default its latest.")
]


def find_workflow(api: ApiContext, name: str, version: int | None) -> CatalogEntry:
    """The workflow a `/workflows/{name}` path names (`?version=N`, else the latest)."""
    entry = api.catalog.find(name, version)
    if entry is None:
        known = ", ".join(api.catalog.names()) or "none"
        which = f"{name} v{version}" if version is not None else name
        raise NotFoundError(
            f"no workflow {which} is installed (installed: {known})", code="workflow_not_found"
        )
    return entry


@router.get("/workflows", response_model=WorkflowList, responses=errors(400, 401))
def list_workflows(api: Context, request: Request) -> Response:
    """The installed workflows: name, version, description, inputs."""
    check_query(request, ())
    return json_response(200, {"workflows": [e.describe() for e in api.catalog.entries()]})


@router.get(
    "/workflows/{name}", response_model=WorkflowDescription, responses=errors(400, 401, 404)
)
def get_workflow(
    api: Context, request: Request, name: WorkflowName, version: Version = None
) -> Response:
    """One installed workflow (its latest version unless `version`)."""
    check_query(request, ("version",))
    return json_response(200, find_workflow(api, name, version).describe())
