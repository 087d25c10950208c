"""What a person does to a run: decide its open gate, resume it when paused (raising its budget
first), cancel it. `switchyard approve|reject|resume|cancel`, the REST API and, on AWS,
approval_api's operator routes call these; each names the run by its id (the execution name) or
its execution ARN.

The caller gives the engine to talk to (`callbacks`) only once the run and its gate are found, so
a command about a run that does not exist starts no engine. Where runs are found differs: the
local engine's records (`EngineRuns`), or on AWS the gates and Step Functions
(`switchyard.approvals.executions`); `RunOperations` bundles what the routes act through. Nothing
here needs the engine itself, so this module loads on Lambda.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.constants import OPERATORS_ROLE
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
from switchyard.local.budget_raise import BudgetRaise, raise_budget, raise_budget_in
from switchyard.local.report import AmbiguousRunError, RunNotFoundError, find_run
from switchyard.records.store import RunStore
from switchyard.stores.budget.ledger import BudgetLedger
from switchyard.stores.tool_calls import PostgresDecisionStore

if TYPE_CHECKING:
    from switchyard.local.reset import ResetSource

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
    execution_id: int | None
    """The local engine's id of the execution; None for a run on AWS."""
    execution_arn: str
    run_id: str
    workflow: str
    status: str


class RunDirectory(Protocol):
    """Where a run is found by its id or execution ARN, and what its status is now."""

    def locate(self, run: str) -> RunRef:
        """The run; RunNotFoundError (AmbiguousRunError) when there is none (several)."""
        ...

    def status(self, run: RunRef) -> str | None: ...


class EngineRuns:
    """The runs of the local engine, from its records (workflow_runs)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def locate(self, run: str) -> RunRef:
        with self._pool.connection() as conn:
            try:
                return locate_run(conn, run)
            except AmbiguousRunError:
                raise
            except RunNotFoundError:
                raise RunNotFoundError(f"no run {run!r} (GET /runs lists the runs)") from None

    def status(self, run: RunRef) -> str | None:
        if run.execution_id is None:
            return None
        with self._pool.connection() as conn:
            return RunStore(conn).status(run.execution_id)


@dataclass(frozen=True)
class RunOperations:
    """What the operators' routes act through: the gates' database, the engine's task-token and
    stop calls, where runs are found, and the ledger a resume raises a budget in (None: the local
    engine's PostgreSQL ledger, through `raise_budget`), and where resets find runs and
    versions (`switchyard.local.reset`; None: resets are not served)."""

    pool: ConnectionPool
    callbacks: TaskCallbacks
    runs: RunDirectory
    ledger: BudgetLedger | None = None
    resets: ResetSource | None = None


def locate_run(conn: psycopg.Connection[Any], run: str) -> RunRef:
    """The run named by its id or execution ARN; RunNotFoundError when there is none."""
    execution_id, arn = find_run(conn, run)
    row = RunStore(conn).run(execution_id)
    assert row is not None  # find_run found it through this table
    return RunRef(execution_id, arn, row.run_id, row.workflow, row.status)


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
    on_claimed: Callable[[Gate], None] | None = None,
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
        on_claimed=on_claimed,
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
    ledger: BudgetLedger | None = None,
) -> BudgetRaise | None:
    """Resume a paused run at `gate` (the paused step runs again), raising by `raise_budget_usd`
    first the budget that refused it (`raise_gate_budget`); what the raise did, None when none
    was asked for. The raise happens only once this resume has claimed the gate."""
    roles = roles if roles is not None else Roles.from_env()
    refusal = roles.refusal(gate.assignee, reviewer)
    if refusal:  # before the budget changes
        raise GateForbiddenError(refusal)
    raised: list[BudgetRaise] = []

    def raise_first(claimed: Gate) -> None:
        if raise_budget_usd:
            raised.append(raise_gate_budget(claimed, raise_budget_usd, pool=pool, ledger=ledger))

    decide_gate(
        gate,
        Decision("resume", reviewer, note=note),
        pool=pool,
        callbacks=callbacks,
        roles=roles,
        on_claimed=raise_first,
    )
    return raised[0] if raised else None


def raise_gate_budget(
    gate: Gate, usd: float, *, pool: ConnectionPool, ledger: BudgetLedger | None = None
) -> BudgetRaise:
    """Raise by `usd` the budget that refused the run at `gate`: in `ledger` when given (the
    DynamoDB ledger on AWS), else in the local engine's PostgreSQL ledger."""
    refusal = refusal_of(gate)
    if ledger is not None:
        return raise_budget_in(ledger, run_id=gate.run_id, usd=usd, refusal=refusal)
    with pool.connection() as conn:
        return raise_budget(
            conn,
            run_id=gate.run_id,
            execution_arn=gate.execution_arn,
            usd=usd,
            refusal=refusal,
        )


def refusal_of(gate: Gate) -> dict[str, Any] | None:
    """The budget refusal a `budget` gate recorded (`{message, scope, limit_micros}`), if any."""
    detail = (gate.request or {}).get("detail") if gate.kind == "budget" else None
    return detail if isinstance(detail, dict) else None


def cancel_run(
    run: RunRef,
    *,
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    note: str,
    reviewer: str | None = None,
    roles: Roles | None = None,
) -> int:
    """Stop a run that has not ended (Step Functions' StopExecution, error `cancelled`). Its open
    gates are closed as cancelled (their task tokens are dead once the run stops), so no one is
    left asked to decide them; returns how many were. When SWITCHYARD_ROLES defines `operators`,
    only they may cancel (GateForbiddenError)."""
    roles = roles if roles is not None else Roles.from_env()
    if roles.deciding_role(None) is not None:
        if reviewer is None:
            raise GateForbiddenError(
                f"say who cancels (the X-Switchyard-User header): only {OPERATORS_ROLE} may"
            )
        refusal = roles.refusal(None, reviewer)
        if refusal:
            raise GateForbiddenError(refusal)
    if run.status in FINAL_STATUSES:
        raise RunEndedError(f"run {run.run_id} has already ended ({run.status})")
    callbacks.stop(run.execution_arn, "cancelled", note)
    return GateStore(pool).cancel_open(run.execution_arn, reviewer=reviewer, note=note)
