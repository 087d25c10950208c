"""approval_notify's work: record the open gate (with what the person must see) and notify.

The `console` channel is the record itself (the CLI and the dashboard list open gates). Email and
Slack notifications plug in as `Notifier`s keyed by channel name (`switchyard.approvals.notify`);
a channel without one is recorded as not sent, so nothing claims a notification that did not
happen. A `human_gate` step names its channels; a gate that names none (a paused run, a refused
budget, a tool call to approve: the operators') goes to every channel a notifier is configured
for (`OPERATOR_CHANNELS`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from switchyard.contract import GateKind, GateRequest
from switchyard.gates.model import Gate
from switchyard.gates.store import GateStore
from switchyard.runtime.rendering import Resolver, render, render_text, template_context
from switchyard.stores.audit import redact

OPERATOR_CHANNELS = ("email", "slack")
"""Where a gate without channels of its own goes, besides the console, when configured."""
Notifier = Callable[[Gate], dict[str, Any]]
"""Sends a gate to its channel; returns what it did (e.g. a message id). It runs once the gate
is recorded, and records a failure to send (`"sent": False`) rather than raising: a person who
was not told can still find the gate (the CLI, `GET /approvals`)."""


def open_gate(
    request: GateRequest,
    store: GateStore,
    *,
    notifiers: Mapping[str, Notifier] | None = None,
    now: datetime | None = None,
    resolver: Resolver | None = None,
) -> Gate:
    """Record the gate and notify its channels. `resolver` reads large outputs of the context
    back, so that `message` and `show` show the values, not references to them."""
    moment = now or datetime.now(UTC)
    config = request.gate or {}
    message: str | None = None
    show: dict[str, Any] | None = None
    channels = ["console"]
    if request.kind is GateKind.APPROVAL:
        context = template_context(
            request.context,
            after=list(config.get("after", [])),
            merge=str(config.get("merge", "by_step")),
            step_input=config.get("input") or None,
            resolver=resolver,
        )
        message = render_text(config.get("message", ""), context)
        rendered = render(config.get("show", {}), context)
        show = rendered if isinstance(rendered, dict) else {"value": rendered}
        channels = list(config.get("channels", ["console"]))
    else:
        message = _describe(request)
        channels += [channel for channel in OPERATOR_CHANNELS if channel in (notifiers or {})]
    deadline = (
        moment + timedelta(seconds=request.timeout_seconds) if request.timeout_seconds else None
    )
    gate = Gate(
        id=secrets.token_urlsafe(16),
        run_id=request.context.run.id,
        execution_arn=_execution_arn(request),
        workflow=request.workflow.name,
        version=request.workflow.version,
        step_id=request.step_id,
        kind=request.kind.value,
        tier=request.tier,
        assignee=request.assignee,
        channels=channels,
        message=message,
        show=show,
        allow_edit=bool(config.get("allow_edit", False)),
        request=_shown(error_details(request.error)) if request.error else None,
        token=request.task_token,
        deadline=deadline,
    )
    store.open(gate)  # first: a link followed at once finds its gate
    for channel in channels:
        notifier = (notifiers or {}).get(channel)
        if notifier is not None:
            gate.notified.append({"channel": channel, "sent": True, **notifier(gate)})
        elif channel == "console":
            gate.notified.append({"channel": "console", "sent": True})
        else:
            gate.notified.append({"channel": channel, "sent": False, "reason": "not configured"})
    store.set_notified(gate)
    return gate


def _execution_arn(request: GateRequest) -> str:
    return request.execution_arn or request.context.run.id


def error_details(error: Mapping[str, Any]) -> dict[str, Any]:
    """Step Functions' {Error, Cause} as a person reads it: the Lambda error JSON unwrapped."""
    name = str(error.get("Error", ""))
    cause: Any = error.get("Cause", "")
    detail: Any = cause
    if isinstance(cause, str):
        try:
            detail = json.loads(cause)
        except ValueError:
            detail = cause
    if isinstance(detail, dict) and isinstance(detail.get("errorMessage"), str):
        try:
            detail = json.loads(detail["errorMessage"])
        except ValueError:
            detail = detail["errorMessage"]
    return {"error": name, "detail": detail}


def _shown(details: dict[str, Any]) -> dict[str, Any]:
    """What a person may see of the error: a tool call's arguments redacted, should a step
    have sent them in clear (the runtime redacts them itself)."""
    detail = details.get("detail")
    if isinstance(detail, dict) and isinstance(detail.get("args"), dict):
        details = {**details, "detail": {**detail, "args": redact(detail["args"])}}
    return details


def _describe(request: GateRequest) -> str:
    step = request.step_id
    if request.kind is GateKind.PAUSE:
        return (
            f"'{step}' failed and the workflow pauses on errors: resume to run it again, or cancel"
        )
    if request.kind is GateKind.BUDGET:
        return f"'{step}' did not fit the budget: raise the budget and resume, or cancel"
    detail = error_details(request.error or {}).get("detail")
    reason = detail.get("reason") if isinstance(detail, dict) else None
    return f"'{step}' needs a decision: {reason or 'see the request'}"
