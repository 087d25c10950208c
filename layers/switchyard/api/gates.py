"""Decisions on a run's open gates, as `switchyard approve|reject|resume` take them
(`switchyard.local.run_actions`, then `switchyard.gates.decide`, which checks roles).

    POST /runs/{run_id}/steps/{step}/approve    body: {"note"?, "edits"?}
    POST /runs/{run_id}/steps/{step}/reject     body: {"note"?}
    POST /runs/{run_id}/resume                  body: {"raise_budget_usd"?, "note"?}

The person deciding is the `X-Switchyard-User` header, which these require.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from switchyard.api.errors import BadRequestError, ConflictError, ForbiddenError
from switchyard.api.messages import (
    Request,
    Response,
    json_response,
    optional_object,
    optional_string,
)
from switchyard.api.routing import Route
from switchyard.api.runs import REVIEWER_HEADER, locate, run_link
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

if TYPE_CHECKING:
    from switchyard.api.context import ApiContext


def reviewer(request: Request) -> str:
    user = (request.header(REVIEWER_HEADER) or "").strip()
    if not user:
        raise BadRequestError(
            f"say who decides with the {REVIEWER_HEADER} header", code="missing_reviewer"
        )
    return user


def approve(api: ApiContext, request: Request) -> Response:
    return _approve_or_reject(api, request, "approve")


def reject(api: ApiContext, request: Request) -> Response:
    return _approve_or_reject(api, request, "reject")


def _approve_or_reject(api: ApiContext, request: Request, action: str) -> Response:
    request.check_query(())
    user = reviewer(request)
    body = request.json_object(("note", "edits") if action == "approve" else ("note",))
    note = optional_string(body, "note")
    edits = optional_object(body, "edits") or {}
    run = locate(api, request)
    step = request.params["step"]
    gate = _open_gate(api, run, action, step)
    decision = Decision(action, user, note=note, edits=edits)  # type: ignore[arg-type]
    _decide(api, gate, decision)
    return json_response(
        200,
        {
            "run_id": run.run_id,
            "step": gate.step_id,
            "decision": "approved" if action == "approve" else "rejected",
            "reviewer": user,
            "note": note,
            "links": {"run": run_link(run.run_id)},
        },
    )


def resume(api: ApiContext, request: Request) -> Response:
    request.check_query(())
    user = reviewer(request)
    body = request.json_object(("raise_budget_usd", "note"))
    note = optional_string(body, "note")
    usd = body.get("raise_budget_usd")
    if usd is not None and (isinstance(usd, bool) or not isinstance(usd, int | float) or usd <= 0):
        raise BadRequestError(f"'raise_budget_usd' must be a number above 0, not {usd!r}")
    run = locate(api, request)
    gate = _open_gate(api, run, "resume", None)
    try:
        raised = resume_run(
            run,
            gate,
            reviewer=user,
            pool=api.pool,
            callbacks=api.commands,
            raise_budget_usd=float(usd) if usd is not None else None,
            note=note,
        )
    except GateDecisionError as exc:
        raise _decision_error(exc) from None
    answer: dict[str, Any] = {
        "run_id": run.run_id,
        "step": gate.step_id,
        "resumed": True,
        "reviewer": user,
        "budget_raised_usd": float(usd) if raised and raised.scope and usd is not None else None,
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


ROUTES = [
    Route("POST", "/runs/{run_id}/steps/{step}/approve", approve),
    Route("POST", "/runs/{run_id}/steps/{step}/reject", reject),
    Route("POST", "/runs/{run_id}/resume", resume),
]
