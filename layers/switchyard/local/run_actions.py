"""What a person does to a run on the local engine: decide its open gate, resume it when paused
(raising its budget first), cancel it. `switchyard approve|reject|resume|cancel` and the REST API
both call these; each names the run by its id (the execution name) or its execution ARN.

The caller gives the engine to talk to (`callbacks`) only once the run and its gate are found, so
a command about a run that does not exist starts no engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.gates import (
    Decision,
    Gate,
    GateForbiddenError,
    GateStatus,
    GateStore,
    Roles,
    TaskCallbacks,
    decide,
)
from switchyard.local.report import find_run
from switchyard.stores.tool_calls import PostgresDecisionStore

FINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled", "timed_out"})

GATE_KINDS: dict[str, tuple[str, ...]] = {
    "approve": ("approval", "human"),
    "reject": ("approval", "human"),
    "resume": ("pause", "budget"),
}
"""Which gates an action decides: approvals and tool calls are approved or rejected; a paused run
(an error with `on_error: pause`, or a step the budget refused) is resumed."""


class NoOpenGateError(LookupError):
    """The run is not waiting at a gate the action could decide."""


class RunEndedError(ValueError):
    """The run has already ended: there is nothing left to cancel."""


@dataclass(frozen=True)
class RunRef:
    execution_id: int
    execution_arn: str
    run_id: str
    workflow: str
    status: str


def locate_run(conn: psycopg.Connection[Any], run: str) -> RunRef:
    """The run named by its id or execution ARN; RunNotFoundError when there is none."""
    execution_id, arn = find_run(conn, run)
    row = conn.execute(
        "SELECT run_id, workflow, status FROM workflow_runs WHERE execution_id = %s",
        (execution_id,),
    ).fetchone()
    assert row is not None  # find_run found it through this table
    return RunRef(execution_id, arn, str(row[0]), str(row[1]), str(row[2]))


def open_gate_for(pool: ConnectionPool, run: RunRef, action: str, step: str | None = None) -> Gate:
    """The open gate of the run (at `step`, if given) that `action` decides; the latest one when
    several are open (parallel branches each waiting)."""
    kinds = GATE_KINDS[action]
    gates = [
        gate
        for gate in GateStore(pool).by_execution(run.execution_arn)
        if gate.status is GateStatus.OPEN
        and gate.kind in kinds
        and (step is None or gate.step_id == step)
    ]
    if not gates:
        where = f" at {step}" if step else ""
        what = "paused step" if action == "resume" else f"{'/'.join(kinds)} gate"
        raise NoOpenGateError(f"run {run.run_id} has no open {what}{where} (it is {run.status})")
    return gates[-1]


def decide_gate(
    gate: Gate,
    decision: Decision,
    *,
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    roles: Roles | None = None,
) -> Gate:
    """Record the decision and send it to the waiting run (`switchyard.gates.decide`, with the
    local stores); GateDecisionError (GateForbiddenError, GateClosedError) when it cannot be."""
    return decide(
        gate,
        decision,
        store=GateStore(pool),
        callbacks=callbacks,
        roles=roles if roles is not None else Roles.from_env(),
        decisions=PostgresDecisionStore(pool),
    )


def resume_run(
    run: RunRef,
    gate: Gate,
    *,
    reviewer: str,
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    raise_budget_usd: float | None = None,
    note: str | None = None,
    roles: Roles | None = None,
) -> bool:
    """Resume a paused run at `gate` (the paused step runs again), raising its budget by
    `raise_budget_usd` first; True when a budget was raised (False: the run has no money budget
    to raise)."""
    roles = roles if roles is not None else Roles.from_env()
    refusal = roles.refusal(gate.assignee, reviewer)
    if refusal:  # before the budget changes
        raise GateForbiddenError(refusal)
    raised = False
    if raise_budget_usd:
        with pool.connection() as conn:
            raised = raise_budget(conn, run, raise_budget_usd)
    decide_gate(
        gate,
        Decision("resume", reviewer, note=note),
        pool=pool,
        callbacks=callbacks,
        roles=roles,
    )
    return raised


def raise_budget(conn: psycopg.Connection[Any], run: RunRef, usd: float) -> bool:
    """Raise the run's money budget (its `run:<id>` scope in the PostgreSQL ledger) by `usd`;
    False when the run has no money budget. A run refused at its first call has no scope row
    yet (the refused reservation left nothing): the row is written with the workflow's budget
    plus `usd`, and the ledger keeps it when the step reserves again."""
    from switchyard.runtime.models_catalog import to_micros

    scope, more = f"run:{run.run_id}", to_micros(str(usd))
    updated = conn.execute(
        "UPDATE budget_scopes SET limit_micros = limit_micros + %s"
        " WHERE scope = %s AND limit_micros IS NOT NULL",
        (more, scope),
    ).rowcount
    if updated:
        return True
    if conn.execute("SELECT 1 FROM budget_scopes WHERE scope = %s", (scope,)).fetchone():
        return False  # a scope with no money limit (a token budget only)
    budget = _workflow_budget(conn, run.execution_id)
    if budget is None or budget.get("max_cost_usd") is None:
        return False
    conn.execute(
        "INSERT INTO budget_scopes (scope, limit_micros) VALUES (%s, %s)"
        " ON CONFLICT (scope) DO UPDATE SET limit_micros = budget_scopes.limit_micros + %s"
        " WHERE budget_scopes.limit_micros IS NOT NULL",
        (scope, to_micros(str(budget["max_cost_usd"])) + more, more),
    )
    return True


def _workflow_budget(conn: psycopg.Connection[Any], execution_id: int) -> dict[str, Any] | None:
    """The run's `budget` as its compiled machine passes it to the steps (`workflow.budget`)."""
    row = conn.execute(
        "SELECT d.definition FROM sfn_executions e JOIN sfn_definitions d"
        " ON d.hash = e.definition_hash WHERE e.id = %s",
        (execution_id,),
    ).fetchone()
    return _find_budget(json.loads(row[0])) if row else None


def _find_budget(node: Any) -> dict[str, Any] | None:
    if isinstance(node, dict):
        workflow = node.get("workflow")
        if isinstance(workflow, dict) and isinstance(workflow.get("budget"), dict):
            return workflow["budget"]  # type: ignore[no-any-return]
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = _find_budget(child)
        if found is not None:
            return found
    return None


def cancel_run(
    run: RunRef,
    *,
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    note: str,
    reviewer: str | None = None,
) -> int:
    """Stop a run that has not ended (Step Functions' StopExecution, error `cancelled`). Its open
    gates are closed as cancelled (their task tokens are dead once the run stops), so no one is
    left asked to decide them; returns how many were."""
    if run.status in FINAL_STATUSES:
        raise RunEndedError(f"run {run.run_id} has already ended ({run.status})")
    callbacks.stop(run.execution_arn, "cancelled", note)
    with pool.connection() as conn:
        return conn.execute(
            "UPDATE gates SET status = 'decided', decision = 'cancel', reviewer = %s, note = %s,"
            " decided_at = now() WHERE execution_arn = %s AND status = 'open'",
            (reviewer, note, run.execution_arn),
        ).rowcount
