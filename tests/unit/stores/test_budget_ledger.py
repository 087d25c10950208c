"""One conformance suite for every BudgetLedger backend (DynamoDB on moto, real PostgreSQL)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import BudgetExceededError
from switchyard.stores.budget import (
    BudgetLedger,
    DynamoDBBudgetLedger,
    PostgresBudgetLedger,
    Reservation,
    Scope,
    ScopeLimit,
    create_budget_table,
)
from tests.unit.stores.backends import serialised_dynamodb_client

DOLLAR = 1_000_000


@pytest.fixture(params=["dynamodb", "postgres"])
def ledger(request: pytest.FixtureRequest) -> Iterator[BudgetLedger]:
    if request.param == "dynamodb":
        with mock_aws():
            client = serialised_dynamodb_client()
            create_budget_table(client, "budgets")
            yield DynamoDBBudgetLedger("budgets", client=client)
    else:
        pool: ConnectionPool = request.getfixturevalue("pg_pool")
        yield PostgresBudgetLedger(pool)


def run_scope() -> Scope:
    return Scope("run", f"run-{uuid.uuid4().hex[:8]}")


def test_reserve_settle_release_keep_exact_totals(ledger: BudgetLedger) -> None:
    run = run_scope()
    limits = [ScopeLimit(run, DOLLAR)]
    r1 = ledger.reserve(
        f"{run.id}:r1", 300_000, limits, owner="s1", model="claude-haiku-4-5", step="wf:a"
    )
    r2 = ledger.reserve(f"{run.id}:r2", 300_000, limits, owner="s2")
    totals = ledger.totals(run)
    assert (totals.limit_micros, totals.spent_micros, totals.reserved_micros) == (
        DOLLAR,
        0,
        600_000,
    )

    ledger.settle(r1, 120_000, tokens=900)
    ledger.settle(r1, 120_000, tokens=900)  # a duplicate request settles nothing twice
    ledger.release(r2)
    ledger.release(r2)
    totals = ledger.totals(run)
    assert (totals.spent_micros, totals.reserved_micros, totals.tokens) == (120_000, 0, 900)
    assert ledger.average_cost("claude-haiku-4-5", "wf:a") == 120_000
    assert ledger.average_cost("claude-haiku-4-5", "wf:other") is None
    assert ledger.open_reservations("s1") == []  # only open reservations are kept


def test_a_reservation_that_does_not_fit_is_refused_on_every_scope(ledger: BudgetLedger) -> None:
    run, step = run_scope(), Scope("step", f"s-{uuid.uuid4().hex[:6]}")
    limits = [ScopeLimit(run, DOLLAR), ScopeLimit(step, 200_000)]
    ledger.reserve(f"{run.id}:a", 150_000, limits, owner="o")
    with pytest.raises(BudgetExceededError) as info:
        ledger.reserve(f"{run.id}:b", 100_000, limits, owner="o")
    assert info.value.name is StepErrorName.BUDGET
    assert info.value.scope == step.key
    # Nothing of the refused reservation stuck on the run scope either.
    assert ledger.totals(run).reserved_micros == 150_000
    assert [r.id for r in ledger.open_reservations("o")] == [f"{run.id}:a"]


def test_reserving_an_open_id_twice_reserves_once(ledger: BudgetLedger) -> None:
    run = run_scope()
    first = ledger.reserve(f"{run.id}:same", 400_000, [ScopeLimit(run, DOLLAR)], owner="o")
    again = ledger.reserve(f"{run.id}:same", 400_000, [ScopeLimit(run, DOLLAR)], owner="o")
    assert first.id == again.id
    assert ledger.totals(run).reserved_micros == 400_000


def test_settling_above_the_estimate_records_the_truth_and_blocks_the_next(
    ledger: BudgetLedger,
) -> None:
    run = run_scope()
    x = ledger.reserve(f"{run.id}:x", 500_000, [ScopeLimit(run, DOLLAR)], owner="o")
    ledger.settle(x, 1_100_000)
    totals = ledger.totals(run)
    assert totals.spent_micros == 1_100_000
    with pytest.raises(BudgetExceededError):
        ledger.reserve(f"{run.id}:y", 1, [ScopeLimit(run, DOLLAR)], owner="o")


def test_raising_the_limit_lets_a_paused_run_go_on(ledger: BudgetLedger) -> None:
    run = run_scope()
    x = ledger.reserve(f"{run.id}:x", 900_000, [ScopeLimit(run, DOLLAR)], owner="o")
    ledger.settle(x, 900_000)
    with pytest.raises(BudgetExceededError):
        ledger.reserve(f"{run.id}:y", 200_000, [ScopeLimit(run, DOLLAR)], owner="o")
    ledger.set_limit(run, 2 * DOLLAR)
    ledger.reserve(f"{run.id}:y", 200_000, [ScopeLimit(run, DOLLAR)], owner="o")
    assert ledger.totals(run).limit_micros == 2 * DOLLAR
    ledger.set_limit(run, None)
    ledger.reserve(f"{run.id}:z", 50 * DOLLAR, [ScopeLimit(run, DOLLAR)], owner="o")


def test_token_limit_refuses_once_reached(ledger: BudgetLedger) -> None:
    run = run_scope()
    limits = [ScopeLimit(run, None, max_tokens=1_000)]
    t1 = ledger.reserve(f"{run.id}:t1", 10, limits, owner="o")
    ledger.settle(t1, 10, tokens=1_000)
    with pytest.raises(BudgetExceededError, match="token"):
        ledger.reserve(f"{run.id}:t2", 10, limits, owner="o")


def test_open_reservations_of_a_crashed_attempt_are_released(ledger: BudgetLedger) -> None:
    run = run_scope()
    owner = f"{run.id}:draft"
    first = ledger.reserve(f"{owner}:1:0", 100_000, [ScopeLimit(run, DOLLAR)], owner=owner)
    ledger.reserve(f"{owner}:1:1", 100_000, [ScopeLimit(run, DOLLAR)], owner=owner)
    ledger.settle(first, 50_000)
    assert ledger.release_open(owner) == 1
    assert ledger.release_open(owner) == 0
    totals = ledger.totals(run)
    assert (totals.spent_micros, totals.reserved_micros) == (50_000, 0)


def test_step_attempts_are_counted_once_each_up_to_the_limit(ledger: BudgetLedger) -> None:
    run = run_scope()
    assert ledger.count_step(run, "a:1", 2) == 1
    assert ledger.count_step(run, "a:1", 2) == 1  # the same attempt again
    assert ledger.count_step(run, "b:1", 2) == 2
    with pytest.raises(BudgetExceededError, match="step"):
        ledger.count_step(run, "c:1", 2)
    assert ledger.totals(run).steps == 2


@pytest.mark.timeout(120)
def test_1000_concurrent_reservations_never_overspend_a_dollar(ledger: BudgetLedger) -> None:
    run = run_scope()
    tenant = Scope("tenant_day", f"acme:{uuid.uuid4().hex[:6]}:2026-01-01")
    limits = [ScopeLimit(run, DOLLAR), ScopeLimit(tenant, 5 * DOLLAR)]
    amount = 7_000  # $0.007: exactly 142 fit in $1.00
    admitted: list[Reservation] = []
    refused: list[str] = []
    lock = threading.Lock()

    def in_threads(target: Callable[[int], None], count: int) -> None:
        start = threading.Barrier(min(count, 100))

        def run_one(n: int) -> None:
            if n < 100:
                start.wait()
            target(n)

        threads = [threading.Thread(target=run_one, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def reserve(n: int) -> None:
        rid = f"{run.id}:{n}"
        try:
            reservation = ledger.reserve(rid, amount, limits, owner=f"{run.id}:step{n % 10}")
        except BudgetExceededError:
            with lock:
                refused.append(rid)
            return
        with lock:
            admitted.append(reservation)

    in_threads(reserve, 1_000)
    assert len(admitted) + len(refused) == 1_000
    assert len(admitted) == DOLLAR // amount  # every cent that fits, and not one call more
    totals = ledger.totals(run)
    assert (totals.spent_micros, totals.reserved_micros) == (0, len(admitted) * amount)
    assert totals.reserved_micros <= DOLLAR

    def settle(n: int) -> None:
        ledger.settle(admitted[n], 2_000 + n % 3, tokens=10)

    in_threads(settle, len(admitted))
    expected = sum(2_000 + n % 3 for n in range(len(admitted)))
    for scope in (run, tenant):
        totals = ledger.totals(scope)
        assert (totals.spent_micros, totals.reserved_micros) == (expected, 0)
        assert totals.tokens == 10 * len(admitted)


def test_dynamodb_items_expire_after_the_retention_but_averages_stay() -> None:
    """The table's TTL deletes a finished run's items: each write sets `expires_at`."""
    from switchyard.constants import BUDGET_RETENTION_DAYS, BUDGET_TTL_ATTRIBUTE

    now = 1_800_000_000.0
    with mock_aws():
        client = serialised_dynamodb_client()
        create_budget_table(client, "budgets")
        ttl = client.describe_time_to_live(TableName="budgets")["TimeToLiveDescription"]
        assert ttl["AttributeName"] == BUDGET_TTL_ATTRIBUTE
        ledger = DynamoDBBudgetLedger("budgets", client=client, clock=lambda: now)
        run = run_scope()
        held = ledger.reserve(
            "r1", DOLLAR, [ScopeLimit(run, 5 * DOLLAR)], owner="s1", model="m", step="a"
        )
        ledger.settle(held, DOLLAR // 2)
        ledger.count_step(run, "attempt-1", 10)
        ledger.set_limit(Scope("run", "other"), 3 * DOLLAR)
        items = {
            item["pk"]["S"]: item.get(BUDGET_TTL_ATTRIBUTE, {}).get("N")
            for item in client.scan(TableName="budgets")["Items"]
        }
    expires = str(int(now) + BUDGET_RETENTION_DAYS * 86400)
    assert items == {
        f"scope#{run.key}": expires,
        "owner#s1": expires,
        f"steps#{run.key}": expires,
        f"attempt#{run.key}#attempt-1": expires,
        "scope#run:other": expires,
        "avg#m#a": None,
    }
