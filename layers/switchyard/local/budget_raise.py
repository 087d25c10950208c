"""Raising a paused run's budget before it resumes (`switchyard resume --raise-budget`, the REST
API's `raise_budget_usd`): in the PostgreSQL ledger of the local engine (`raise_budget`), or
through any `BudgetLedger` (`raise_budget_in`: the DynamoDB ledger, for approval_api on AWS).

The scope raised is the one that refused the step, as its budget gate recorded it: the run's own
scope, an enclosing run's (a sub-workflow spent what its parent had), a step's, a map's or the
tenant's day. A refusal of tokens, steps or time is not lifted by money: nothing is raised, and the
caller says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from switchyard.runtime.models_catalog import to_micros
from switchyard.stores.budget.ledger import BudgetLedger, Scope, ScopeKind

SCOPE_KINDS: dict[str, ScopeKind] = {"run": "run", "step": "step", "tenant_day": "tenant_day"}
"""A scope key's kind (`run:<id>`, `step:...`, `tenant_day:...`), as a ledger's `Scope`."""


@dataclass(frozen=True)
class BudgetRaise:
    """What a raise did: the scope raised, or why nothing was."""

    scope: str | None
    why_not: str | None = None


def raise_budget(
    conn: psycopg.Connection[Any],
    *,
    run_id: str,
    execution_arn: str,
    usd: float,
    refusal: Mapping[str, Any] | None,
) -> BudgetRaise:
    """Add `usd` to the money limit of the scope that refused the run (`refusal`: the budget
    gate's error detail, `{message, scope, limit_micros}`); the run's own scope when the gate
    does not say. The run's execution's definition holds its budget, should the gate not say
    the limit."""
    more = to_micros(str(usd))
    own = f"run:{run_id}"
    scope = str(refusal["scope"]) if refusal and refusal.get("scope") else own
    if refusal and refusal.get("scope") and "limit_micros" not in refusal:
        return BudgetRaise(None, f"money does not lift this refusal: {refusal.get('message')}")
    updated = conn.execute(
        "UPDATE budget_scopes SET limit_micros = limit_micros + %s"
        " WHERE scope = %s AND limit_micros IS NOT NULL",
        (more, scope),
    ).rowcount
    if updated:
        return BudgetRaise(scope)
    if conn.execute("SELECT 1 FROM budget_scopes WHERE scope = %s", (scope,)).fetchone():
        return BudgetRaise(None, f"{scope} has no money limit; nothing to raise")
    # A scope refused at its first reservation has no row yet (the refused reservation left
    # nothing): write it with its limit plus the raise; the ledger keeps it when the step
    # reserves again.
    limit = _refused_limit(refusal)
    if limit is None and scope == own:
        limit = _run_limit(conn, execution_arn)
    if limit is None:
        return BudgetRaise(None, f"the run has no money budget; nothing to raise ({scope})")
    conn.execute(
        "INSERT INTO budget_scopes (scope, limit_micros) VALUES (%s, %s)"
        " ON CONFLICT (scope) DO UPDATE SET limit_micros = budget_scopes.limit_micros + %s"
        " WHERE budget_scopes.limit_micros IS NOT NULL",
        (scope, limit + more, more),
    )
    return BudgetRaise(scope)


def raise_budget_in(
    ledger: BudgetLedger, *, run_id: str, usd: float, refusal: Mapping[str, Any] | None
) -> BudgetRaise:
    """`raise_budget` through a ledger's own `totals` and `set_limit`: the scope's limit, else
    the limit the refusal recorded, plus `usd`. Two raises of one scope at the same moment may
    count once (the ledger has no atomic raise); each answer says what was raised."""
    more = to_micros(str(usd))
    key = str(refusal["scope"]) if refusal and refusal.get("scope") else f"run:{run_id}"
    if refusal and refusal.get("scope") and "limit_micros" not in refusal:
        return BudgetRaise(None, f"money does not lift this refusal: {refusal.get('message')}")
    kind, _, name = key.partition(":")
    if kind not in SCOPE_KINDS or not name:
        return BudgetRaise(None, f"the gate names no budget scope a raise can lift ({key})")
    scope = Scope(SCOPE_KINDS[kind], name)
    limit = ledger.totals(scope).limit_micros
    if limit is None:
        limit = _refused_limit(refusal)
    if limit is None:
        return BudgetRaise(None, f"{key} has no money limit; nothing to raise")
    ledger.set_limit(scope, limit + more)
    return BudgetRaise(key)


def _refused_limit(refusal: Mapping[str, Any] | None) -> int | None:
    limit = refusal.get("limit_micros") if refusal else None
    return limit if isinstance(limit, int) else None


def _run_limit(conn: psycopg.Connection[Any], execution_arn: str) -> int | None:
    budget = _workflow_budget(conn, execution_arn)
    if budget is None or budget.get("max_cost_usd") is None:
        return None
    return to_micros(str(budget["max_cost_usd"]))


def _workflow_budget(conn: psycopg.Connection[Any], execution_arn: str) -> dict[str, Any] | None:
    """The run's `budget` as its compiled machine passes it to the steps (`workflow.budget`)."""
    row = conn.execute(
        "SELECT d.definition FROM sfn_executions e JOIN sfn_definitions d"
        " ON d.hash = e.definition_hash WHERE e.arn = %s",
        (execution_arn,),
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
