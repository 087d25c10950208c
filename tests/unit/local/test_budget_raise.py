"""Raising a paused run's budget: the scope that refused it is raised, on the real PostgreSQL
ledger, and the refused reservation then fits; refusals that money does not lift raise nothing.
Each case runs twice: through the local engine's SQL (`raise_budget`) and through the ledger's
own interface (`raise_budget_in`, as approval_api raises in DynamoDB on AWS)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract.step_errors import BudgetExceededError
from switchyard.local.budget_raise import BudgetRaise, raise_budget, raise_budget_in
from switchyard.stores.budget import PostgresBudgetLedger, Scope, ScopeLimit


@pytest.fixture(scope="module")
def pool(pg_conninfo: str) -> Iterator[ConnectionPool]:
    with ConnectionPool(pg_conninfo, min_size=1, max_size=2) as pool:
        yield pool


def _refusal(ledger: PostgresBudgetLedger, amount: int, limits: list[ScopeLimit]) -> dict[str, Any]:
    """The cause a refused reservation leaves on the budget gate (`{type, message, scope, ...}`)."""
    with pytest.raises(BudgetExceededError) as refused:
        ledger.reserve(uuid.uuid4().hex, amount, limits, owner="o")
    return refused.value.cause()


@pytest.fixture(params=["sql", "ledger"])
def how(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _raise(
    pool: ConnectionPool, how: str, refusal: dict[str, Any] | None, usd: float, run_id: str = "r"
) -> BudgetRaise:
    if how == "ledger":
        ledger = PostgresBudgetLedger(pool)
        return raise_budget_in(ledger, run_id=run_id, usd=usd, refusal=refusal)
    with pool.connection() as conn:
        return raise_budget(conn, run_id=run_id, execution_arn="arn:none", usd=usd, refusal=refusal)


def test_the_scope_that_refused_is_raised_and_the_reservation_then_fits(
    pool: ConnectionPool,
    how: str,
) -> None:
    ledger = PostgresBudgetLedger(pool)
    run, step = Scope("run", uuid.uuid4().hex), Scope("step", uuid.uuid4().hex)
    limits = [ScopeLimit(run, 1_000_000), ScopeLimit(step, 10_000)]
    ledger.reserve(uuid.uuid4().hex, 8_000, limits, owner="o")
    refusal = _refusal(ledger, 5_000, limits)
    assert refusal["scope"] == step.key and refusal["limit_micros"] == 10_000

    raised = _raise(pool, how, refusal, 0.01, run_id=run.id)

    assert raised.scope == step.key and raised.why_not is None
    assert ledger.totals(step).limit_micros == 20_000
    assert ledger.totals(run).limit_micros == 1_000_000  # the run's own budget is untouched
    ledger.reserve(uuid.uuid4().hex, 5_000, limits, owner="o")


def test_a_scope_refused_at_its_first_reservation_is_written_with_its_limit_plus_the_raise(
    pool: ConnectionPool,
    how: str,
) -> None:
    ledger = PostgresBudgetLedger(pool)
    tenant_day = Scope("tenant_day", f"acme-{uuid.uuid4().hex[:6]}:2026-11-29")
    refusal = _refusal(ledger, 100_000, [ScopeLimit(tenant_day, 30_000)])
    with psycopg.connect(pool.conninfo) as conn:
        row = conn.execute("SELECT 1 FROM budget_scopes WHERE scope = %s", (tenant_day.key,))
        assert row.fetchone() is None  # the refused reservation left nothing

    raised = _raise(pool, how, refusal, 0.5)

    assert raised.scope == tenant_day.key
    assert ledger.totals(tenant_day).limit_micros == 530_000
    ledger.reserve(uuid.uuid4().hex, 100_000, [ScopeLimit(tenant_day, 30_000)], owner="o")


def test_money_does_not_lift_a_token_refusal(pool: ConnectionPool, how: str) -> None:
    ledger = PostgresBudgetLedger(pool)
    run = Scope("run", uuid.uuid4().hex)
    reservation = ledger.reserve(uuid.uuid4().hex, 1, [ScopeLimit(run, None, 10)], owner="o")
    ledger.settle(reservation, 1, tokens=10)
    refusal = _refusal(ledger, 1, [ScopeLimit(run, None, 10)])

    raised = _raise(pool, how, refusal, 1.0, run_id=run.id)

    assert raised.scope is None
    assert raised.why_not == (
        f"money does not lift this refusal: token budget of {run.key} exhausted: "
        "10 of 10 tokens used"
    )


def test_a_scope_without_a_money_limit_is_not_raised(pool: ConnectionPool, how: str) -> None:
    ledger = PostgresBudgetLedger(pool)
    run = Scope("run", uuid.uuid4().hex)
    ledger.reserve(uuid.uuid4().hex, 1, [ScopeLimit(run, None, 100)], owner="o")

    raised = _raise(pool, how, None, 1.0, run_id=run.id)

    assert (
        raised.scope is None and raised.why_not == f"{run.key} has no money limit; nothing to raise"
    )
