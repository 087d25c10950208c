"""The budget guard of a step: reservations around its model calls."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import Usage
from switchyard.runtime.budgets import BudgetGuard
from switchyard.runtime.clock import ManualClock
from switchyard.runtime.errors import PermanentError
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
