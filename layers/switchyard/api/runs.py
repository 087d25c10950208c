"""Runs: start one, list them, show one, cancel one.

    POST /workflows/{name}/runs      body: the run's input (a JSON object); 201, or 200 when an
                                     `Idempotency-Key` names a run already started with this body
    GET  /runs?status=&workflow=&limit=
    GET  /runs/{run_id}              the `switchyard run --json` shape (docs/cli.md)
    POST /runs/{run_id}/cancel       body: {"note"?}

An `Idempotency-Key` header becomes the run's id (the execution name), so the key of a request
sent twice names one run. Keys are global, not per workflow: a run id names one run.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from switchyard.api.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
)
from switchyard.api.messages import Request, Response, json_response, optional_string
from switchyard.api.routing import Route
from switchyard.api.workflows import CatalogEntry, find_workflow
from switchyard.constants import API_KEY_ENV, LLM_SCRIPT_ENV
from switchyard.engine import errors as engine_errors
from switchyard.gates import GateForbiddenError
from switchyard.local.model_access import has_model_credentials, needs_model
from switchyard.local.report import (
    RUN_STATUSES,
    AmbiguousRunError,
    RunNotFoundError,
    find_run,
    list_runs,
    run_view,
)
from switchyard.local.run_actions import RunEndedError, RunRef, cancel_run, locate_run
from switchyard.platform.run_start import InvalidRunInputError, check_inputs
from switchyard.runtime.providers import load_script

if TYPE_CHECKING:
    from switchyard.api.context import ApiContext

IDEMPOTENCY_HEADER = "Idempotency-Key"
LLM_SCRIPT_HEADER = "X-Switchyard-LLM-Script"
REVIEWER_HEADER = "X-Switchyard-User"
MAX_LIST = 500
_RUN_ID = re.compile(r"^[0-9A-Za-z_-]{1,80}$")  # a Step Functions execution name


def run_link(run_id: str) -> str:
    return f"/runs/{run_id}"


def new_run_id() -> str:
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(6)}"


# --- POST /workflows/{name}/runs --------------------------------------------------------------


def start_run(api: ApiContext, request: Request) -> Response:
    request.check_query(("version",))
    entry = find_workflow(api, request)
    try:
        inputs = check_inputs(entry.installed.workflow.inputs, request.json())
    except InvalidRunInputError as exc:
        raise BadRequestError(
            "invalid run input: " + "; ".join(exc.problems),
            code="invalid_input",
            details={"problems": exc.problems},
        ) from None
    options = _model_options(request, entry)
    key = request.header(IDEMPOTENCY_HEADER)
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
        rows = conn.execute(
            "SELECT workflow, workflow_version, status, input FROM workflow_runs WHERE run_id = %s",
            (key,),
        ).fetchall()
    if not rows:
        return None
    for workflow, version, status, data in rows:
        if workflow == entry.name and data == inputs:
            return json_response(200, _started(key, workflow, version, status))
    workflow = rows[0][0]
    what = "another body" if workflow == entry.name else f"workflow {workflow}"
    raise ConflictError(
        f"{IDEMPOTENCY_HEADER} {key!r} was used for a run of {what}; a key names one run",
        code="idempotency_conflict",
    )


def _status(api: ApiContext, run_id: str) -> str | None:
    with api.pool.connection() as conn:
        row = conn.execute(
            "SELECT status FROM workflow_runs WHERE run_id = %s ORDER BY execution_id DESC LIMIT 1",
            (run_id,),
        ).fetchone()
    return str(row[0]) if row else None


def _model_options(request: Request, entry: CatalogEntry) -> dict[str, Any]:
    """The run's stored model script (header, else the server's SWITCHYARD_LLM_SCRIPT); a run
    whose agent steps could neither answer from a script nor call a model is refused."""
    path = request.header(LLM_SCRIPT_HEADER) or os.environ.get(LLM_SCRIPT_ENV)
    if path:
        return {"llm_script": _script(path)}
    if needs_model([entry.installed.workflow]) and not has_model_credentials():
        raise BadRequestError(
            f"{entry.name} has agent or LLM router steps, and the server has no model"
            f" credentials: start it with {API_KEY_ENV} set, or answer from a script with the"
            f" {LLM_SCRIPT_HEADER} header (a path on the server; format: docs/cli.md)",
            code="no_model",
        )
    return {}


def _script(path: str) -> dict[str, Any]:
    try:
        stat = Path(path).stat()
        return _load_script(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    except Exception as exc:  # unreadable, not YAML, not a script: the caller's to fix
        raise BadRequestError(
            f"cannot read the model script {path}: {exc}", code="bad_llm_script"
        ) from None


@lru_cache(maxsize=32)
def _load_script(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """Parsed once per version of the file (the mtime and size are the cache key)."""
    return dict(load_script(path))


# --- GET /runs, GET /runs/{run_id} ------------------------------------------------------------


def execution_status(api: ApiContext, execution_id: int) -> str | None:
    with api.pool.connection() as conn:
        row = conn.execute(
            "SELECT status FROM workflow_runs WHERE execution_id = %s", (execution_id,)
        ).fetchone()
    return str(row[0]) if row else None


def get_runs(api: ApiContext, request: Request) -> Response:
    request.check_query(("status", "workflow", "limit"))
    status = request.query_value("status") or None
    if status is not None and status not in RUN_STATUSES:
        raise BadRequestError(f"status must be one of {', '.join(RUN_STATUSES)}, not {status!r}")
    raw = request.query_value("limit") or "50"
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIST:
        raise BadRequestError(f"limit must be a whole number from 1 to {MAX_LIST}, not {raw!r}")
    with api.pool.connection() as conn:
        runs = list_runs(
            conn, status=status, limit=int(raw), workflow=request.query_value("workflow") or None
        )
    for run in runs:
        run["links"] = {"self": run_link(run["run_id"])}
    return json_response(200, {"runs": runs})


def get_run(api: ApiContext, request: Request) -> Response:
    request.check_query(())
    with api.pool.connection() as conn:
        try:
            execution_id, _ = find_run(conn, request.params["run_id"])
        except RunNotFoundError as exc:
            raise _not_found(request, exc) from None
        view = run_view(conn, execution_id)
    return json_response(200, view.data)


def locate(api: ApiContext, request: Request) -> RunRef:
    """The run of a `/runs/{run_id}` path; 404 when there is none."""
    with api.pool.connection() as conn:
        try:
            return locate_run(conn, request.params["run_id"])
        except RunNotFoundError as exc:
            raise _not_found(request, exc) from None


def _not_found(request: Request, error: RunNotFoundError) -> ApiError:
    if isinstance(error, AmbiguousRunError):
        return ConflictError(str(error), code="ambiguous_run_id")
    run_id = request.params["run_id"]
    return NotFoundError(f"no run {run_id!r} (GET /runs lists the runs)", code="run_not_found")


# --- POST /runs/{run_id}/cancel -----------------------------------------------------------------


def cancel(api: ApiContext, request: Request) -> Response:
    request.check_query(())
    body = request.json_object(("note",))
    note = optional_string(body, "note")
    user = request.header(REVIEWER_HEADER)
    run = locate(api, request)
    cause = note or (f"cancelled by {user}" if user else "cancelled through the REST API")
    try:
        cancel_run(run, pool=api.pool, callbacks=api.commands, note=cause, reviewer=user)
    except RunEndedError as exc:
        raise ConflictError(str(exc), code="run_ended") from None
    except GateForbiddenError as exc:
        raise ForbiddenError(str(exc)) from None
    return json_response(
        200,
        {
            "run_id": run.run_id,
            "status": execution_status(api, run.execution_id) or "cancelled",
            "links": {"self": run_link(run.run_id)},
        },
    )


ROUTES = [
    Route("POST", "/workflows/{name}/runs", start_run),
    Route("GET", "/runs", get_runs),
    Route("GET", "/runs/{run_id}", get_run),
    Route("POST", "/runs/{run_id}/cancel", cancel),
]
