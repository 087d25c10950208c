"""Runs: start one, list them, show one (cancelling one is an operator's route:
`switchyard.api.operators`).

    POST /workflows/{name}/runs      body: the run's input (a JSON object); 201, or 200 when an
                                     `Idempotency-Key` names a run already started with this body;
                                     `?priority=high|normal|low` over the workflow's priority
    GET  /runs?status=&workflow=&limit=&stuck=&stuck_after=   (stuck: docs/runbooks.md)
    GET  /runs/{run_id}              the `switchyard run --json` shape (docs/cli.md)

An `Idempotency-Key` header becomes the run's id (the execution name), so the key of a request
sent twice names one run. Keys are global, not per workflow: a run id names one run.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from typing import Annotated, Any

import psycopg
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response
from pydantic import BeforeValidator, Field

from switchyard.api.catalog import CatalogEntry
from switchyard.api.context import ApiContext
from switchyard.api.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    NotFoundError,
)
from switchyard.api.messages import (
    NO_BODY,
    check_path_value,
    check_query,
    json_response,
    json_type,
)
from switchyard.api.models import (
    NO_NUL,
    RUN_INPUT_SCHEMA,
    RunList,
    RunStarted,
    RunStatus,
    RunView,
)
from switchyard.api.operators import run_link
from switchyard.api.routing import Body, Context, RunId, WorkflowName, errors
from switchyard.api.scripts import ScriptRefusedError
from switchyard.api.workflows import Version, find_workflow
from switchyard.constants import (
    API_KEY_ENV,
    DEFAULT_STUCK_AFTER_SECONDS,
    LLM_SCRIPT_ENV,
    STUCK_AFTER_ENV,
)
from switchyard.contract import PRIORITY_KEY
from switchyard.engine import errors as engine_errors
from switchyard.local.model_access import has_model_credentials, needs_model
from switchyard.local.report import (
    AmbiguousRunError,
    RunNotFoundError,
    find_run,
    list_runs,
    run_view,
)
from switchyard.local.stuck import StuckAfterError, stuck_after, stuck_runs
from switchyard.model import Priority
from switchyard.platform.run_start import InvalidRunInputError, check_inputs
from switchyard.records.store import RunStore
from switchyard.runtime.providers import load_script

IDEMPOTENCY_HEADER = "Idempotency-Key"
LLM_SCRIPT_HEADER = "X-Switchyard-LLM-Script"
MAX_LIST = 500
RUN_ID_PATTERN = r"^[0-9A-Za-z_-]{1,80}$"
"""A Step Functions execution name, as an Idempotency-Key must be."""
_RUN_ID = re.compile(RUN_ID_PATTERN)
STUCK_AFTER_PATTERN = (
    r"^(0*[1-9][0-9]{0,6}s?|0*[1-9][0-9]{0,4}m|0*[1-9][0-9]{0,3}h|0*[1-9][0-9]{0,2}d)?$"
)
"""A threshold of one second to under 1,000 days (empty: none given)."""

router = APIRouter(tags=["runs"])


def new_run_id() -> str:
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(6)}"


def _blank_is_none(value: Any) -> Any:
    return value or None  # `?status=` filters nothing, as no status at all


# --- POST /workflows/{name}/runs --------------------------------------------------------------


@router.post(
    "/workflows/{name}/runs",
    status_code=201,
    response_model=RunStarted,
    responses={
        200: {"model": RunStarted, "description": "An Idempotency-Key named this run before."},
        **errors(400, 401, 404, 409, 413, 415, 503),
    },
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": RUN_INPUT_SCHEMA}},
        }
    },
)
def start_run(
    api: Context,
    request: Request,
    name: WorkflowName,
    body: Body,
    version: Version = None,
    priority: Annotated[
        Priority | None,
        Query(description="The run's priority, over its workflow's (docs/operations.md)."),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias=IDEMPOTENCY_HEADER,
            description="Becomes the run id: a request sent twice starts one run.",
            json_schema_extra={"pattern": RUN_ID_PATTERN},
        ),
    ] = None,
    llm_script: Annotated[
        str | None,
        Header(
            alias=LLM_SCRIPT_HEADER,
            description="A model script of the server's scripts directory to answer from.",
        ),
    ] = None,
) -> Response:
    """Start a run; the body is the run's input."""
    check_query(request, ("version", "priority"))
    entry = find_workflow(api, name, version)
    if body is not NO_BODY and not isinstance(body, dict):
        raise BadRequestError(f"the body must be a JSON object, not {json_type(body)}")
    try:
        inputs = check_inputs(entry.installed.workflow.inputs, {} if body is NO_BODY else body)
    except InvalidRunInputError as exc:
        raise BadRequestError(
            "invalid run input: " + "; ".join(exc.problems),
            code="invalid_input",
            details={"problems": exc.problems},
        ) from None
    if priority is not None:
        inputs = {**inputs, PRIORITY_KEY: priority}  # run_start reads it, and leaves it out
    options = _model_options(api, llm_script, entry)
    key = idempotency_key
    if key is not None:
        if not _RUN_ID.match(key):
            raise BadRequestError(
                f"{IDEMPOTENCY_HEADER} must be 1 to 80 letters, digits, '-' or '_' (it becomes"
                f" the run id), not {key!r}",
                code="bad_idempotency_key",
            )
        existing = _same_request(api, key, entry, inputs)
        if existing is not None:
            return existing
    run_id = key or new_run_id()
    try:
        api.commands.start_execution(entry.installed.version_arn, run_id, inputs, options)
    except engine_errors.ExecutionAlreadyExists:
        # another request with this key got in first
        existing = _same_request(api, run_id, entry, inputs) if key else None
        if existing is not None:
            return existing
        raise ConflictError(f"a run {run_id} exists already", code="idempotency_conflict") from None
    status = _status(api, run_id) or "running"
    return json_response(
        201, _started(run_id, entry.name, entry.version, status), {"Location": run_link(run_id)}
    )


def _started(run_id: str, workflow: str, version: int | None, status: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "workflow": workflow,
        "version": version,
        "status": status,
        "links": {"self": run_link(run_id)},
    }


def _same_request(
    api: ApiContext, key: str, entry: CatalogEntry, inputs: dict[str, Any]
) -> Response | None:
    """200 with the run an earlier request with this key started, when it had the same workflow
    and body; 409 when it had another; None when the key is new."""
    with api.pool.connection() as conn:
        runs = RunStore(conn).runs_with_id(key)
    if not runs:
        return None
    for run in runs:
        if run.workflow == entry.name and run.input == inputs:
            return json_response(200, _started(key, run.workflow, run.workflow_version, run.status))
    workflow = runs[0].workflow
    what = "another body" if workflow == entry.name else f"workflow {workflow}"
    raise ConflictError(
        f"{IDEMPOTENCY_HEADER} {key!r} was used for a run of {what}; a key names one run",
        code="idempotency_conflict",
    )


def _status(api: ApiContext, run_id: str) -> str | None:
    with api.pool.connection() as conn:
        runs = RunStore(conn).runs_with_id(run_id)
    return runs[0].status if runs else None


def _model_options(api: ApiContext, header: str | None, entry: CatalogEntry) -> dict[str, Any]:
    """The run's stored model script (the header's, from the scripts directory; else the
    server's own SWITCHYARD_LLM_SCRIPT); a run whose agent steps could neither answer from a
    script nor call a model is refused."""
    if header:  # an empty header is no header, as it always was
        return {"llm_script": _script(api, header)}
    configured = os.environ.get(LLM_SCRIPT_ENV)
    if configured:  # the operator's own setting: trusted, read as `switchyard run` reads it
        return {"llm_script": dict(load_script(configured))}
    if needs_model([entry.installed.workflow]) and not has_model_credentials():
        raise BadRequestError(
            f"{entry.name} has agent or LLM router steps, and the server has no model"
            f" credentials: start it with {API_KEY_ENV} set, or answer from a script with the"
            f" {LLM_SCRIPT_HEADER} header (a file of the server's scripts directory; format:"
            " docs/cli.md)",
            code="no_model",
        )
    return {}


def _script(api: ApiContext, name: str) -> dict[str, Any]:
    if api.scripts is None:
        raise BadRequestError(
            f"this server has no scripts directory, so {LLM_SCRIPT_HEADER} cannot be used"
            " (start it with --workflows DIR holding DIR/scripts, or --scripts DIR)",
            code="bad_llm_script",
        )
    try:
        return api.scripts.load(name)
    except ScriptRefusedError as exc:
        raise BadRequestError(str(exc), code="bad_llm_script") from None


# --- GET /runs, GET /runs/{run_id} ------------------------------------------------------------


@router.get("/runs", response_model=RunList, responses=errors(400, 401, 503))
def get_runs(
    api: Context,
    request: Request,
    status: Annotated[
        RunStatus | None, BeforeValidator(_blank_is_none), Query(description="Only runs of it.")
    ] = None,
    workflow: Annotated[
        Annotated[str, Field(pattern=NO_NUL)] | None,
        BeforeValidator(_blank_is_none),
        Query(description="Only runs of this workflow (empty: of any)."),
    ] = None,
    limit: Annotated[
        Annotated[int, Field(ge=1, le=MAX_LIST)] | None,
        BeforeValidator(_blank_is_none),
        Query(description="How many runs at most (default 50)."),
    ] = None,
    stuck: Annotated[
        bool | None,
        BeforeValidator(_blank_is_none),
        Query(
            description="Only stuck runs: no transition for `stuck_after`, and waiting on no gate"
            " and no timer still ahead (docs/runbooks.md)."
        ),
    ] = None,
    stuck_after: Annotated[
        Annotated[str, Field(pattern=STUCK_AFTER_PATTERN)] | None,
        BeforeValidator(_blank_is_none),
        Query(
            description="The stuck threshold (implies `stuck=true` unless `stuck=false`):"
            " seconds, or 90s, 10m, 1h, 2d;"
            f" default the server's {STUCK_AFTER_ENV}, else {DEFAULT_STUCK_AFTER_SECONDS} s."
        ),
    ] = None,
) -> Response:
    """The latest runs first."""
    check_query(request, ("status", "workflow", "limit", "stuck", "stuck_after"))
    with api.pool.connection() as conn:
        if stuck or (stuck is None and stuck_after is not None):
            runs = _stuck(conn, status, workflow, limit or 50, stuck_after)
        else:
            runs = list_runs(conn, status=status, limit=limit or 50, workflow=workflow)
    for run in runs:
        run["links"] = {"self": run_link(run["run_id"])}
    return json_response(200, {"runs": runs})


def _stuck(
    conn: psycopg.Connection[Any],
    status: str | None,
    workflow: str | None,
    limit: int,
    threshold: str | None,
) -> list[dict[str, Any]]:
    try:
        after = stuck_after(threshold)
    except StuckAfterError as exc:
        raise BadRequestError(str(exc), code="bad_stuck_after") from None
    found = stuck_runs(conn, after_seconds=after, status=status, workflow=workflow, limit=limit)
    return [run.to_json() for run in found]


@router.get("/runs/{run_id}", response_model=RunView, responses=errors(400, 401, 404, 409, 503))
def get_run(api: Context, request: Request, run_id: RunId) -> Response:
    """One run, exactly as `switchyard run --json` prints it."""
    check_query(request, ())
    check_path_value("run id", run_id)
    with api.pool.connection() as conn:
        try:
            execution_id, _ = find_run(conn, run_id)
        except RunNotFoundError as exc:
            raise _not_found(run_id, exc) from None
        view = run_view(conn, execution_id)
    return json_response(200, view.data)


def _not_found(run_id: str, error: RunNotFoundError) -> ApiError:
    if isinstance(error, AmbiguousRunError):
        return ConflictError(str(error), code="ambiguous_run_id")
    return NotFoundError(f"no run {run_id!r} (GET /runs lists the runs)", code="run_not_found")
