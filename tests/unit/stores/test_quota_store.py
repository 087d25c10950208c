"""One conformance suite for every QuotaStore backend (DynamoDB on moto, real PostgreSQL)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import ThrottledError
from switchyard.runtime.clock import ManualClock
from switchyard.stores.budget import create_budget_table
from switchyard.stores.quota import (
    DynamoDBQuotaStore,
    PostgresQuotaStore,
    QuotaStore,
    QuotaTake,
    window_of,
)
from tests.unit.stores.backends import serialised_dynamodb_client

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z, the start of a window


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(params=["dynamodb", "postgres"])
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[QuotaStore]:
    if request.param == "dynamodb":
        with mock_aws():
            client = serialised_dynamodb_client()
            create_budget_table(client, "budgets")
            yield DynamoDBQuotaStore("budgets", client=client, clock=clock.now)
    else:
        pool: ConnectionPool = request.getfixturevalue("pg_pool")
        yield PostgresQuotaStore(pool, clock=clock.now)


def counter(kind: str = "tokens") -> str:
    return f"t{uuid.uuid4().hex[:8]}:claude-haiku-4-5:{kind}"


def take(name: str, amount: int, limit: int, admit: int | None = None) -> QuotaTake:
    return QuotaTake(name, amount, limit, limit if admit is None else admit)


def test_takes_count_up_to_the_quota_and_not_past_it(store: QuotaStore) -> None:
    tokens = counter()
    store.take([take(tokens, 600, 1000)])
    store.take([take(tokens, 400, 1000)])  # exactly full
    with pytest.raises(ThrottledError) as info:
        store.take([take(tokens, 1, 1000)])
    assert info.value.name is StepErrorName.THROTTLED and info.value.retryable
    assert info.value.quota == tokens
    assert "1000 of 1000 per minute used" in info.value.message
    assert store.usage(tokens).current == 1000


def test_a_take_is_all_or_nothing_across_counters(store: QuotaStore) -> None:
    tokens, requests = counter("tokens"), counter("requests")
    store.take([take(requests, 1, 1)])
    with pytest.raises(ThrottledError) as info:
        store.take([take(tokens, 100, 1000), take(requests, 1, 1)])
    assert info.value.quota == requests
    assert store.usage(tokens).current == 0  # the tokens that fitted were not kept


def test_the_previous_minute_weighs_as_much_as_the_last_60_seconds_still_cover(
    store: QuotaStore, clock: ManualClock
) -> None:
    tokens = counter()
    store.take([take(tokens, 1000, 1000)])
    clock.advance(60 + 15)  # a quarter into the next window: 750 of the 1000 still count
    usage = store.usage(tokens)
    assert (usage.previous, usage.current, usage.last_minute) == (1000, 0, 750)
    store.take([take(tokens, 250, 1000)])
    with pytest.raises(ThrottledError) as info:
        store.take([take(tokens, 100, 1000)])
    # 100 more fit once another 100 of the previous minute have faded: 6 seconds on.
    assert info.value.retry_after == pytest.approx(6.0, abs=0.01)
    clock.advance(6)
    store.take([take(tokens, 100, 1000)])
    assert store.usage(tokens).current == 350


def test_retry_after_is_when_the_take_would_fit(store: QuotaStore, clock: ManualClock) -> None:
    tokens = counter()
    clock.advance(30)
    store.take([take(tokens, 800, 1000)])
    with pytest.raises(ThrottledError) as info:
        store.take([take(tokens, 600, 1000)])
    assert info.value.retry_after is not None
    # It fits in the next window once the 800 have faded to 400: 30 s left here, 30 s there.
    assert info.value.retry_after == pytest.approx(60.0, abs=0.01)
    clock.advance(info.value.retry_after - 1)
    with pytest.raises(ThrottledError):
        store.take([take(tokens, 600, 1000)])
    clock.advance(1)
    store.take([take(tokens, 600, 1000)])


def test_a_lower_share_is_refused_where_the_full_quota_still_has_room(store: QuotaStore) -> None:
    tokens = counter()
    store.take([take(tokens, 500, 1000, admit=500)])  # low priority: half the quota
    with pytest.raises(ThrottledError) as info:
        store.take([take(tokens, 1, 1000, admit=500)])
    assert "500 of them open to this call's priority" in info.value.message
    store.take([take(tokens, 300, 1000, admit=800)])  # normal
    store.take([take(tokens, 200, 1000)])  # high: the rest
    assert store.usage(tokens).current == 1000


def test_adjust_gives_back_what_a_call_did_not_use(store: QuotaStore, clock: ManualClock) -> None:
    tokens = counter()
    grant = store.take([take(tokens, 900, 1000)])
    store.adjust(grant, tokens, -700)  # the call used 200 of the 900 it reserved
    store.take([take(tokens, 800, 1000)])
    assert store.usage(tokens).current == 1000
    clock.advance(61)  # a correction lands in the window the take was counted in
    store.adjust(grant, tokens, -100)
    assert store.usage(tokens).previous == 900
    assert grant.window == window_of(START)


def test_concurrent_takes_never_pass_the_quota(store: QuotaStore) -> None:
    tokens, requests = counter("tokens"), counter("requests")
    granted: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            try:
                store.take([take(tokens, 10, 10_000), take(requests, 1, 25)])
            except ThrottledError:
                continue
            with lock:
                granted.append(1)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(granted) == 25
    assert store.usage(requests).current == 25
    assert store.usage(tokens).current == 250


def test_concurrent_takes_keep_the_reserved_share_for_the_highest_priority(
    store: QuotaStore,
) -> None:
    """Normal takes race high ones: normal stops at its 80%, high fills the rest, never over."""
    requests = counter("requests")
    granted: dict[str, int] = {"high": 0, "normal": 0}
    lock = threading.Lock()

    def worker(priority: str, admit: int, tries: int) -> None:
        for _ in range(tries):
            try:
                store.take([take(requests, 1, 40, admit=admit)])
            except ThrottledError:
                continue
            with lock:
                granted[priority] += 1

    threads = [threading.Thread(target=worker, args=("normal", 32, 6)) for _ in range(10)]
    threads += [threading.Thread(target=worker, args=("high", 40, 12)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert granted["normal"] <= 32
    assert granted["normal"] + granted["high"] == 40  # high alone tries 48 times
    assert store.usage(requests).current == 40
