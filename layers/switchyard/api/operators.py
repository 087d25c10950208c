"""What operators do to a run over HTTP: decide its open gate, resume it when paused, cancel it.
One definition of these routes serves both places: the REST API locally (`switchyard dev`,
behind its bearer token) and approval_api on AWS (IAM-authorized at the HTTP API). Each app says
what the routes act through with `serve(app, operations)`: the local engine's records and
commands, or the gates and Step Functions on AWS (`switchyard.local.run_actions.RunOperations`).

    POST /runs/{run_id}/steps/{step}/approve    body: {"note"?, "edits"?}
    POST /runs/{run_id}/steps/{step}/reject     body: {"note"?}
    POST /runs/{run_id}/resume                  body: {"raise_budget_usd"?, "note"?}
    POST /runs/{run_id}/cancel                  body: {"note"?}
    POST /runs/{run_id}/reset                   body: {"to", "version"?, "cancel"?, "note"?}

The person deciding is the `X-Switchyard-User` header, which approve, reject and resume require
(cancel and reset too, when `SWITCHYARD_ROLES` defines `operators`). The decisions go through
`switchyard.gates.decide`, which checks the person's role. This module and what it imports load
on Lambda: no engine, no HTTP server.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import BaseModel

from switchyard.api.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
)
from switchyard.api.messages import body_model, check_path_value, check_query, json_response
from switchyard.api.models import (
    ApproveBody,
    CancelBody,
    Cancelled,
    Decided,
    RejectBody,
    ResetBody,
    ResetStarted,
    ResumeBody,
    Resumed,
)
from switchyard.api.routing import (
    MISSING_REVIEWER,
    REVIEWER_HEADER,
    Body,
    Reviewer,
    RunId,
    StepId,
    errors,
)
from switchyard.gates import (
    Decision,
    Gate,
    GateClosedError,
    GateDecisionError,
    GateForbiddenError,
)
from switchyard.local.report import AmbiguousRunError, RunNotFoundError
from switchyard.local.reset import (
    ResetRequest,
    RunNotEndedError,
    UnknownStepError,
    UnknownVersionError,
    reset_run,
)
from switchyard.local.run_actions import (
    NoOpenGateError,
    RunEndedError,
    RunOperations,
    RunRef,
    cancel_run,
    decide_gate,
    open_gate_for,
    resume_run,
)

router = APIRouter()
_STATE = "run_operations"


def serve(app: FastAPI, operations: RunOperations) -> None:
    """Make `operations` what this module's routes act through in `app`."""
    setattr(app.state, _STATE, operations)


def _operations(request: Request) -> RunOperations:
    operations: RunOperations = getattr(request.app.state, _STATE)
    return operations


Operations = Annotated[RunOperations, Depends(_operations)]


def route_keys() -> tuple[str, ...]:
    """`METHOD /path` of each route, as API Gateway names routes (`POST /runs/{run_id}/cancel`)."""
    return tuple(
        f"{method} {route.path}"
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in sorted(route.methods or ())
    )


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"content": {"application/json": {"schema": model.model_json_schema()}}}}


def _required_body_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = _body_schema(model)
    schema["requestBody"]["required"] = True
    return schema


def reviewer(user: str) -> str:
    user = user.strip()
    if not user:
        raise BadRequestError(MISSING_REVIEWER, code="missing_reviewer")
    return user


def run_link(run_id: str) -> str:
    return f"/runs/{run_id}"


_DECIDE_ERRORS = errors(400, 401, 403, 404, 409, 413, 415, 503)


# --- POST /runs/{run_id}/steps/{step}/approve|reject ------------------------------------------


@router.post(
    "/runs/{run_id}/steps/{step}/approve",
    tags=["gates"],
    response_model=Decided,
    responses=_DECIDE_ERRORS,
    openapi_extra=_body_schema(ApproveBody),
)
def approve(
    ops: Operations, request: Request, run_id: RunId, step: StepId, body: Body, user: Reviewer
) -> Response:
    """Approve the open gate at `step`."""
    check_query(request, ())
    decider = reviewer(user)
    decided = body_model(ApproveBody, body)
    decision = Decision("approve", decider, note=decided.note, edits=decided.edits or {})
    return _decide_at(ops, run_id, step, decision)


@router.post(
    "/runs/{run_id}/steps/{step}/reject",
    tags=["gates"],
    response_model=Decided,
    responses=_DECIDE_ERRORS,
    openapi_extra=_body_schema(RejectBody),
)
def reject(
    ops: Operations, request: Request, run_id: RunId, step: StepId, body: Body, user: Reviewer
) -> Response:
    """Reject the open gate at `step`: the run fails there."""
    check_query(request, ())
    decider = reviewer(user)
    decided = body_model(RejectBody, body)
    return _decide_at(ops, run_id, step, Decision("reject", decider, note=decided.note, edits={}))


def _decide_at(ops: RunOperations, run_id: str, step: str, decision: Decision) -> Response:
    check_path_value("step", step)
    run = locate(ops, run_id)
    gate = _open_gate(ops, run, decision.action, step)
    try:
        decide_gate(gate, decision, pool=ops.pool, callbacks=ops.callbacks)
    except GateDecisionError as exc:
        raise _decision_error(exc) from None
    return json_response(
        200,
        {
            "run_id": run.run_id,
            "step": gate.step_id,
            "decision": "approved" if decision.action == "approve" else "rejected",
            "reviewer": decision.reviewer,
            "note": decision.note,
            "links": {"run": run_link(run.run_id)},
        },
    )


# --- POST /runs/{run_id}/resume -----------------------------------------------------------------


@router.post(
    "/runs/{run_id}/resume",
    tags=["gates"],
    response_model=Resumed,
    responses=_DECIDE_ERRORS,
    openapi_extra=_body_schema(ResumeBody),
)
def resume(
    ops: Operations, request: Request, run_id: RunId, body: Body, user: Reviewer
) -> Response:
    """Resume a paused run (its paused step runs again), raising its budget first if asked."""
    check_query(request, ())
    decider = reviewer(user)
    resumed = body_model(ResumeBody, body)
    usd = resumed.raise_budget_usd
    run = locate(ops, run_id)
    gate = _open_gate(ops, run, "resume", None)
    try:
        raised = resume_run(
            run,
            gate,
            reviewer=decider,
            pool=ops.pool,
            callbacks=ops.callbacks,
            raise_budget_usd=usd,
            note=resumed.note,
            ledger=ops.ledger,
        )
    except GateDecisionError as exc:
        raise _decision_error(exc) from None
    answer: dict[str, Any] = {
        "run_id": run.run_id,
        "step": gate.step_id,
        "resumed": True,
        "reviewer": decider,
        "budget_raised_usd": usd if raised and raised.scope and usd is not None else None,
        "budget_raised_scope": raised.scope if raised else None,
        "links": {"run": run_link(run.run_id)},
    }
    if raised is not None and raised.why_not:
        answer["warnings"] = [raised.why_not]
    return json_response(200, answer)


# --- POST /runs/{run_id}/cancel -----------------------------------------------------------------


@router.post(
    "/runs/{run_id}/cancel",
    tags=["runs"],
    response_model=Cancelled,
    responses=errors(400, 401, 403, 404, 409, 413, 415, 503),
    openapi_extra=_body_schema(CancelBody),
)
def cancel(
    ops: Operations,
    request: Request,
    run_id: RunId,
    body: Body,
    user: Annotated[
        str | None,
        Header(alias=REVIEWER_HEADER, description="Who cancels (required for operators)."),
    ] = None,
) -> Response:
    """Stop a run that has not ended."""
    check_query(request, ())
    note = body_model(CancelBody, body).note
    run = locate(ops, run_id)
    cause = note or (f"cancelled by {user}" if user else "cancelled through the REST API")
    try:
        cancel_run(run, pool=ops.pool, callbacks=ops.callbacks, note=cause, reviewer=user)
    except RunEndedError as exc:
        raise ConflictError(str(exc), code="run_ended") from None
    except GateForbiddenError as exc:
        raise ForbiddenError(str(exc)) from None
    return json_response(
        200,
        {
            "run_id": run.run_id,
            "status": ops.runs.status(run) or "cancelled",
            "links": {"self": run_link(run.run_id)},
        },
    )


# --- POST /runs/{run_id}/reset ------------------------------------------------------------------


@router.post(
    "/runs/{run_id}/reset",
    tags=["runs"],
    status_code=201,
    response_model=ResetStarted,
    responses=errors(400, 401, 403, 404, 409, 413, 415, 503),
    openapi_extra=_required_body_schema(ResetBody),
)
def reset(
    ops: Operations,
    request: Request,
    run_id: RunId,
    body: Body,
    user: Annotated[
        str | None,
        Header(alias=REVIEWER_HEADER, description="Who resets (required for operators)."),
    ] = None,
) -> Response:
    """Start the run again as a new run from before step `to`: the steps before it replay
    their recorded results, `to` and the steps after it run afresh (docs/operations.md)."""
    check_query(request, ())
    asked = body_model(ResetBody, body)
    if ops.resets is None:
        raise NotFoundError("this server does not reset runs", code="not_found")
    run = locate(ops, run_id)
    wanted = ResetRequest(
        asked.to, version=asked.version, cancel=asked.cancel, reviewer=user, note=asked.note
    )
    try:
        done = reset_run(run, wanted, source=ops.resets, pool=ops.pool, callbacks=ops.callbacks)
    except UnknownStepError as exc:
        raise NotFoundError(str(exc), code="step_not_found") from None
    except UnknownVersionError as exc:
        raise NotFoundError(str(exc), code="workflow_not_found") from None
    except (RunNotEndedError, RunEndedError) as exc:
        raise ConflictError(str(exc), code="run_not_ended") from None
    except GateForbiddenError as exc:
        raise ForbiddenError(str(exc)) from None
    answer = {
        **done.to_json(),
        "links": {"run": run_link(done.run_id), "reset_from": run_link(run.run_id)},
    }
    return json_response(201, answer, {"Location": run_link(done.run_id)})


# --- shared -------------------------------------------------------------------------------------


def locate(ops: RunOperations, run_id: str) -> RunRef:
    """The run of a `/runs/{run_id}` path; 404 when there is none, 409 when it is ambiguous."""
    check_path_value("run id", run_id)
    try:
        return ops.runs.locate(run_id)
    except RunNotFoundError as exc:
        raise run_not_found(run_id, exc) from None


def run_not_found(run_id: str, error: RunNotFoundError) -> ApiError:
    if isinstance(error, AmbiguousRunError):
        return ConflictError(str(error), code="ambiguous_run_id")
    return NotFoundError(str(error) or f"no run {run_id!r}", code="run_not_found")


def _open_gate(ops: RunOperations, run: RunRef, action: str, step: str | None) -> Gate:
    try:
        return open_gate_for(ops.pool, run, action, step)
    except NoOpenGateError as exc:
        raise ConflictError(str(exc), code="no_open_gate") from None


def _decision_error(exc: GateDecisionError) -> Exception:
    if isinstance(exc, GateForbiddenError):
        return ForbiddenError(str(exc))
    if isinstance(exc, GateClosedError):
        return ConflictError(str(exc), code="gate_closed")
    return BadRequestError(str(exc), code="invalid_decision")
