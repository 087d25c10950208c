"""Decisions on a run's open gates, as `switchyard approve|reject|resume` take them
(`switchyard.local.run_actions`, then `switchyard.gates.decide`, which checks roles).

    POST /runs/{run_id}/steps/{step}/approve    body: {"note"?, "edits"?}
    POST /runs/{run_id}/steps/{step}/reject     body: {"note"?}
    POST /runs/{run_id}/resume                  body: {"raise_budget_usd"?, "note"?}

The person deciding is the `X-Switchyard-User` header, which these require.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import Response
from pydantic import BaseModel

from switchyard.api.context import ApiContext
from switchyard.api.errors import BadRequestError, ConflictError, ForbiddenError
from switchyard.api.messages import body_model, check_path_value, check_query, json_response
from switchyard.api.models import ApproveBody, Decided, RejectBody, ResumeBody, Resumed
from switchyard.api.routing import Context, RunId, StepId, errors
from switchyard.api.runs import REVIEWER_HEADER, Body, locate, run_link
from switchyard.gates import (
    Decision,
    Gate,
    GateClosedError,
    GateDecisionError,
    GateForbiddenError,
)
from switchyard.local.run_actions import (
    NoOpenGateError,
    RunRef,
    decide_gate,
    open_gate_for,
    resume_run,
)

router = APIRouter(tags=["gates"])

Reviewer = Annotated[
    str,
    Header(
        alias=REVIEWER_HEADER,
        pattern=r"\S",
        description="Who decides: recorded on the gate and checked against its role.",
    ),
]
"""Required: a request without it (or with only spaces) is `400 missing_reviewer` (the app's
validation handler names it so)."""
MISSING_REVIEWER = f"say who decides with the {REVIEWER_HEADER} header"


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"content": {"application/json": {"schema": model.model_json_schema()}}}}


def reviewer(user: str) -> str:
    user = user.strip()
    if not user:
        raise BadRequestError(MISSING_REVIEWER, code="missing_reviewer")
    return user


_DECIDE_ERRORS = errors(400, 401, 403, 404, 409, 413, 415, 503)


@router.post(
    "/runs/{run_id}/steps/{step}/approve",
    response_model=Decided,
    responses=_DECIDE_ERRORS,
    openapi_extra=_body_schema(ApproveBody),
)
def approve(
    api: Context, request: Request, run_id: RunId, step: StepId, body: Body, user: Reviewer
) -> Response:
    """Approve the open gate at `step`."""
    check_query(request, ())
    decider = reviewer(user)
    decided = body_model(ApproveBody, body)
    decision = Decision("approve", decider, note=decided.note, edits=decided.edits or {})
    return _decide_at(api, run_id, step, decision)


@router.post(
    "/runs/{run_id}/steps/{step}/reject",
    response_model=Decided,
    responses=_DECIDE_ERRORS,
    openapi_extra=_body_schema(RejectBody),
)
def reject(
    api: Context, request: Request, run_id: RunId, step: StepId, body: Body, user: Reviewer
) -> Response:
    """Reject the open gate at `step`: the run fails there."""
    check_query(request, ())
    decider = reviewer(user)
    decided = body_model(RejectBody, body)
    return _decide_at(api, run_id, step, Decision("reject", decider, note=decided.note, edits={}))


def _decide_at(api: ApiContext, run_id: str, step: str, decision: Decision) -> Response:
    check_path_value("step", step)
    run = locate(api, run_id)
    gate = _open_gate(api, run, decision.action, step)
    _decide(api, gate, decision)
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


@router.post(
    "/runs/{run_id}/resume",
    response_model=Resumed,
    responses=_DECIDE_ERRORS,
    openapi_extra=_body_schema(ResumeBody),
)
def resume(api: Context, request: Request, run_id: RunId, body: Body, user: Reviewer) -> Response:
    """Resume a paused run (its paused step runs again), raising its budget first if asked."""
    check_query(request, ())
    decider = reviewer(user)
    resumed = body_model(ResumeBody, body)
    usd = resumed.raise_budget_usd
    run = locate(api, run_id)
    gate = _open_gate(api, run, "resume", None)
    try:
        raised = resume_run(
            run,
            gate,
            reviewer=decider,
            pool=api.pool,
            callbacks=api.commands,
            raise_budget_usd=usd,
            note=resumed.note,
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


def _open_gate(api: ApiContext, run: RunRef, action: str, step: str | None) -> Gate:
    try:
        return open_gate_for(api.pool, run, action, step)
    except NoOpenGateError as exc:
        raise ConflictError(str(exc), code="no_open_gate") from None


def _decide(api: ApiContext, gate: Gate, decision: Decision) -> None:
    try:
        decide_gate(gate, decision, pool=api.pool, callbacks=api.commands)
    except GateDecisionError as exc:
        raise _decision_error(exc) from None


def _decision_error(exc: GateDecisionError) -> Exception:
    if isinstance(exc, GateForbiddenError):
        return ForbiddenError(str(exc))
    if isinstance(exc, GateClosedError):
        return ConflictError(str(exc), code="gate_closed")
    return BadRequestError(str(exc), code="invalid_decision")
