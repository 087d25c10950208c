"""A person's decision on a gate, checked and sent to the waiting run.

- approval: approve (optionally with edits of the shown fields) or reject;
- pause and budget: resume (the step runs again) or cancel (the run stops);
- human (a tool call): approve (optionally with edited arguments, or with the call's output when
  its outcome was unknown) or reject; either way the step runs again and reads the decision.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from switchyard.contract import GateDecision
from switchyard.gates.callbacks import TaskCallbacks
from switchyard.gates.model import Gate, GateStatus
from switchyard.gates.roles import Roles
from switchyard.gates.store import GateStore
from switchyard.stores.tool_calls import DecisionStore, ToolDecision

Action = Literal["approve", "reject", "resume", "cancel"]
_ALLOWED: dict[str, tuple[str, ...]] = {
    "approval": ("approve", "reject", "cancel"),
    "human": ("approve", "reject", "cancel"),
    "pause": ("resume", "cancel"),
    "budget": ("resume", "cancel"),
}


_TASK_GONE = frozenset({"TaskTimedOut", "TaskDoesNotExist"})


class GateDecisionError(ValueError):
    """The decision cannot be taken: the gate is closed, the action does not fit, the person
    may not decide."""


class GateClosedError(GateDecisionError):
    """The gate is no longer open: decided (perhaps by someone else first) or superseded."""


class GateForbiddenError(GateDecisionError):
    """The person may not decide for the gate's assignee, or for the operators when the gate has
    none (SWITCHYARD_ROLES)."""


@dataclass
class Decision:
    action: Action
    reviewer: str
    note: str | None = None
    edits: dict[str, Any] = field(default_factory=dict)
    """approval: new values of shown fields; human: edited tool arguments."""
    output: Any = None
    """human, unknown outcome: the call did happen and this is its result."""


def decide(
    gate: Gate,
    decision: Decision,
    *,
    store: GateStore,
    callbacks: TaskCallbacks,
    roles: Roles | None = None,
    decisions: DecisionStore | None = None,
    now: datetime | None = None,
    on_claimed: Callable[[Gate], None] | None = None,
) -> Gate:
    """Check and record the decision, then send it to the run. `on_claimed` runs once this
    decision has claimed the gate and before the run hears it (a resume's budget raise): of two
    deciders at once, only the one that claims it runs it; if it raises, the gate reopens."""
    if gate.status is not GateStatus.OPEN:
        raise GateClosedError(
            f"gate {gate.id} at '{gate.step_id}' is {gate.status.value}, not open"
        )
    allowed = _ALLOWED.get(gate.kind, ())
    if decision.action not in allowed:
        raise GateDecisionError(
            f"a {gate.kind} gate takes {', '.join(allowed)}, not {decision.action}"
        )
    refusal = (roles or Roles()).refusal(gate.assignee, decision.reviewer)
    if refusal:
        raise GateForbiddenError(refusal)
    edits = dict(decision.edits)
    if gate.kind == "approval" and edits:
        if not gate.allow_edit:
            raise GateDecisionError(f"'{gate.step_id}' does not allow edits")
        unknown = sorted(set(edits) - set(gate.show or {}))
        if unknown:
            raise GateDecisionError(f"only shown fields can be edited, not {', '.join(unknown)}")
    moment = now or datetime.now(UTC)
    gate.decision = {"approve": "approved", "reject": "rejected"}.get(
        decision.action, decision.action
    )
    gate.reviewer, gate.note, gate.edits = decision.reviewer, decision.note, edits or None
    if not store.close(gate):  # claims the gate: a second decider is turned away
        raise GateClosedError(f"gate {gate.id} was decided by someone else first")
    gate.status, gate.decided_at = GateStatus.DECIDED, moment
    try:
        if on_claimed is not None:
            on_claimed(gate)
        _send(gate, decision, callbacks, decisions, moment)
    except Exception as exc:
        if task_gone(exc):  # the run no longer waits here (it ended, or the tier timed out)
            store.close_gone(gate)
            gate.status = GateStatus.CLOSED
            raise GateClosedError(
                f"the run no longer waits at '{gate.step_id}' (it ended or the tier timed out)"
            ) from None
        store.reopen(gate)  # the run did not hear the decision: the gate stays open
        gate.status = GateStatus.OPEN
        raise
    return gate


def task_gone(exc: Exception) -> bool:
    """Whether `exc` is the answer (of the local engine or of Step Functions) that the task
    token no longer waits: TaskTimedOut or TaskDoesNotExist."""
    code = getattr(exc, "code", None)
    if code is None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            code = (response.get("Error") or {}).get("Code")
    return code in _TASK_GONE


def _send(
    gate: Gate,
    decision: Decision,
    callbacks: TaskCallbacks,
    decisions: DecisionStore | None,
    moment: datetime,
) -> None:
    if decision.action == "cancel":
        callbacks.stop(
            gate.execution_arn, "cancelled", decision.note or f"cancelled by {decision.reviewer}"
        )
    elif gate.kind == "approval":
        _answer_approval(gate, decision, callbacks, moment)
    elif gate.kind == "human":
        _answer_tool_call(gate, decision, callbacks, decisions)
    else:
        callbacks.send_success(
            gate.token, {"resumed": True, "reviewer": decision.reviewer, "note": decision.note}
        )


def _answer_approval(
    gate: Gate, decision: Decision, callbacks: TaskCallbacks, moment: datetime
) -> None:
    if decision.action == "reject":
        cause = {"reviewer": decision.reviewer, "note": decision.note, "tier": gate.tier}
        callbacks.send_failure(gate.token, "rejected", json.dumps(cause))
        return
    answer = GateDecision(
        decision="approved",
        reviewer=decision.reviewer,
        note=decision.note,
        edits=dict(decision.edits),
        decided_at=moment.isoformat().replace("+00:00", "Z"),
        tier=gate.tier,
    )
    callbacks.send_success(gate.token, answer.model_dump(mode="json"))


def _answer_tool_call(
    gate: Gate, decision: Decision, callbacks: TaskCallbacks, decisions: DecisionStore | None
) -> None:
    detail = (gate.request or {}).get("detail")
    if not isinstance(detail, dict):
        detail = {}
    call_id = detail.get("call_id")
    shown = detail.get("args")
    if decisions is not None and call_id:
        decisions.record(
            gate.run_id,
            str(call_id),
            ToolDecision(
                decision="approved" if decision.action == "approve" else "rejected",
                args=dict(decision.edits) or None,
                output=decision.output,
                reviewer=decision.reviewer,
                note=decision.note,
                shown_args=shown if isinstance(shown, dict) else None,
            ),
        )
    callbacks.send_success(gate.token, {"decision": gate.decision, "reviewer": decision.reviewer})
