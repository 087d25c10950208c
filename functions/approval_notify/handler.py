"""approval_notify: the target of every `.waitForTaskToken` task (human gates, paused runs,
refused budgets, tool calls to approve). Records the open gate, with the task token kept
server-side only, and notifies its channels (`switchyard.approvals.notify`: each person of the
role gets their own signed link by e-mail and Slack). The token never reaches a log."""

from __future__ import annotations

from functools import cache
from typing import Any

from switchyard.approvals import ApprovalSettings, LinkBook, approval_notifiers
from switchyard.contract import GateRequest
from switchyard.gates import GateStore, open_gate
from switchyard.gates.notify import Notifier
from switchyard.runtime.instruments import function_logger
from switchyard.runtime.large_outputs import lazy_resolver
from switchyard.runtime.replay import RunRecordResults, replayed_gate
from switchyard.runtime.wiring import database_pool, output_stores, task_callbacks

logger = function_logger("approval_notify")


@cache
def _store() -> GateStore:
    pool = database_pool()
    if pool is None:
        raise RuntimeError("approval_notify needs the run database (DATABASE_URL or its secret)")
    _notifiers.cache_clear()  # built anew with the store (tests clear `_store` between databases)
    return GateStore(pool)


@cache
def _notifiers() -> dict[str, Notifier]:
    """E-mail and Slack as configured. A configuration that cannot be read (SWITCHYARD_ROLES,
    a secret) is logged, and gates still open: people find them through the CLI and
    `GET /approvals` while it is fixed."""
    try:
        pool = database_pool()
        store = GateStore(pool) if pool is not None else None
        return approval_notifiers(LinkBook(ApprovalSettings.from_env(pool)), store=store)
    except Exception as exc:
        logger.error("approval notifications are off: %s", type(exc).__name__)
        logger.error(str(exc)[:500])
        return {}


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = GateRequest.model_validate(event)
    replayed = _replayed(request)
    if replayed is not None:
        return replayed
    gate = open_gate(
        request, _store(), notifiers=_notifiers(), resolver=lazy_resolver(output_stores)
    )
    logger.info(
        "gate open",
        extra={
            "run_id": gate.run_id,
            "step_id": gate.step_id,
            "kind": gate.kind,
            "gate_id": gate.id,
        },
    )
    return {"gate_id": gate.id, "notified": gate.notified}


def _replayed(request: GateRequest) -> dict[str, Any] | None:
    """A reset run's gate before the reset's step answers itself with the decision the run it
    resets recorded (`switchyard.runtime.replay`): no gate opens, nobody is asked."""
    run = request.context.run
    if run.reset is None and run.replays_child is None:
        return None
    pool = database_pool()
    callbacks = task_callbacks()
    if pool is None or callbacks is None:
        return None
    recorded = replayed_gate(request, RunRecordResults(pool))
    if recorded is None:
        return None
    try:
        callbacks.send_success(request.task_token, recorded.output)
    except Exception as exc:  # the gate opens instead: a person decides, nothing is lost
        logger.warning("could not replay the gate's decision: %s", type(exc).__name__)
        return None
    logger.info(
        "gate replayed",
        extra={
            "run_id": request.context.run.id,
            "step_id": request.step_id,
            "replayed_from": recorded.run_id,
        },
    )
    return {"replayed_from": recorded.run_id}
