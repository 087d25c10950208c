"""The budget guard of a step: reservations around its model calls."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import Usage
from switchyard.contract.step_errors import BudgetExceededError, PermanentError
from switchyard.model import StepBudget
from switchyard.runtime.budgets import BudgetGuard
from switchyard.runtime.clock import ManualClock
from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.stores.budget import PostgresBudgetLedger, Scope
from tests.unit.runtime.helpers import invocation


def test_a_call_that_cannot_be_priced_releases_its_reservation(pg_pool: ConnectionPool) -> None:
    ledger = PostgresBudgetLedger(pg_pool)
    inv = invocation("draft", {"type": "agent"}, budget={"max_cost_usd": 1.0})
    guard = BudgetGuard(inv, ledger, ModelCatalog(), ManualClock())
    reservation = guard.reserve("claude-haiku-4-5", 0)
    assert ledger.open_reservations(inv.idempotency_key) != []
    with pytest.raises(PermanentError, match="no price for model 'gpt-5'"):
        guard.settle(reservation, Usage(input_tokens=10, output_tokens=5, model="gpt-5"))
    assert ledger.open_reservations(inv.idempotency_key) == []
    assert ledger.totals(Scope("run", inv.context.run.id)).reserved_micros == 0


def test_a_step_that_used_its_budget_is_refused_until_its_scope_is_raised(
    pg_pool: ConnectionPool,
) -> None:
    ledger = PostgresBudgetLedger(pg_pool)
    inv = invocation("draft", {"type": "agent"})
    guard = BudgetGuard(
        inv, ledger, ModelCatalog(), ManualClock(), step_budget=StepBudget(max_cost_usd=0.001)
    )
    first = guard.reserve("claude-haiku-4-5", 0)
    guard.settle(first, Usage(input_tokens=5_000, output_tokens=0, model="claude-haiku-4-5"))
    with pytest.raises(BudgetExceededError, match=r"has used its budget of \$0.001000") as refused:
        guard.reserve("claude-haiku-4-5", 1)
    step = Scope("step", inv.idempotency_key)
    assert refused.value.cause()["scope"] == step.key
    assert refused.value.cause()["limit_micros"] == 1_000

    ledger.set_limit(step, 1_000 + 10_000)  # what `switchyard resume --raise-budget 0.01` does

    again = guard.reserve("claude-haiku-4-5", 1)
    assert again is not None and again.amount_micros == 11_000 - 5_000  # what is left
