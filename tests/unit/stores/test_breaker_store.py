"""One conformance suite for every BreakerStore backend (memory, DynamoDB on moto, real
PostgreSQL)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import CircuitOpenError
from switchyard.runtime.clock import ManualClock
from switchyard.stores.breaker import (
    BreakerPolicy,
    BreakerStore,
    DynamoDBBreakerStore,
    InMemoryBreakerStore,
    PostgresBreakerStore,
)
from switchyard.stores.budget import create_budget_table
from tests.unit.stores.backends import serialised_dynamodb_client

POLICY = BreakerPolicy(
    window_seconds=60, min_calls=4, failure_rate=0.5, open_seconds=30, probe_seconds=10
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_767_225_600.0)  # the start of a window


@pytest.fixture(params=["memory", "dynamodb", "postgres"])
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[BreakerStore]:
    if request.param == "memory":
        yield InMemoryBreakerStore(policy=POLICY, clock=clock.now)
    elif request.param == "dynamodb":
        with mock_aws():
            client = serialised_dynamodb_client()
            create_budget_table(client, "budgets")
            yield DynamoDBBreakerStore("budgets", client=client, policy=POLICY, clock=clock.now)
    else:
        pool: ConnectionPool = request.getfixturevalue("pg_pool")
        yield PostgresBreakerStore(pool, policy=POLICY, clock=clock.now)


def circuit() -> str:
    return f"host:{uuid.uuid4().hex[:8]}.example.com"


def call(store: BreakerStore, name: str, outcome: str) -> None:
    admission = store.admit(name)
    store.record(name, admission, outcome)  # type: ignore[arg-type]


def open_circuit(store: BreakerStore, name: str) -> None:
    for _ in range(4):
        call(store, name, "failure")
    assert store.state(name).state == "open"


def test_a_circuit_opens_once_enough_calls_fail_in_a_window(store: BreakerStore) -> None:
    name = circuit()
    for outcome in ("success", "success", "failure"):
        call(store, name, outcome)
    assert store.state(name).state == "closed"  # 3 calls: fewer than min_calls
    admission = store.admit(name)
    before, after = store.record(name, admission, "failure")  # 2 of 4 failed: half of them
    assert (before.state, after.state, after.opened) == ("closed", "open", 1)
    assert (after.calls, after.failures) == (4, 2)


def test_successes_keep_a_circuit_closed(store: BreakerStore) -> None:
    name = circuit()
    for outcome in ("failure", "success", "success", "success", "failure"):
        call(store, name, outcome)
    assert store.state(name).state == "closed"  # 2 of 5 failed


def test_failures_of_an_earlier_window_do_not_count(
    store: BreakerStore, clock: ManualClock
) -> None:
    name = circuit()
    for _ in range(3):
        call(store, name, "failure")
    clock.advance(60)
    call(store, name, "failure")
    state = store.state(name)
    assert (state.state, state.calls, state.failures) == ("closed", 1, 1)


def test_an_open_circuit_refuses_calls_at_once(store: BreakerStore, clock: ManualClock) -> None:
    name = circuit()
    open_circuit(store, name)
    clock.advance(12)
    with pytest.raises(CircuitOpenError) as info:
        store.admit(name)
    error = info.value
    assert error.name is StepErrorName.CIRCUIT_OPEN and error.retryable
    assert error.circuit == name and error.retry_after == pytest.approx(18)
    assert f"circuit {name} is open: 4 of its last 4 calls failed" in error.message


def test_a_half_open_circuit_lets_one_probe_through_and_closes_on_its_success(
    store: BreakerStore, clock: ManualClock
) -> None:
    name = circuit()
    open_circuit(store, name)
    clock.advance(30)
    assert store.admit(name) == "probe"
    with pytest.raises(CircuitOpenError, match="is half-open: a probe call"):
        store.admit(name)
    _, after = store.record(name, "probe", "success")
    assert (after.state, after.calls, after.failures) == ("closed", 0, 0)
    assert store.admit(name) == "closed"


def test_a_failed_probe_opens_the_circuit_again(store: BreakerStore, clock: ManualClock) -> None:
    name = circuit()
    open_circuit(store, name)
    clock.advance(30)
    assert store.admit(name) == "probe"
    _, after = store.record(name, "probe", "failure")
    assert (after.state, after.opened) == ("open", 2)
    clock.advance(29)
    with pytest.raises(CircuitOpenError, match="its probe call failed"):
        store.admit(name)
    clock.advance(1)
    assert store.admit(name) == "probe"


def test_a_probe_that_never_reports_does_not_keep_the_circuit_shut(
    store: BreakerStore, clock: ManualClock
) -> None:
    name = circuit()
    open_circuit(store, name)
    clock.advance(30)
    assert store.admit(name) == "probe"  # its process dies
    clock.advance(10)
    assert store.admit(name) == "probe"


def test_a_probe_that_says_nothing_lets_another_call_probe(
    store: BreakerStore, clock: ManualClock
) -> None:
    name = circuit()
    open_circuit(store, name)
    clock.advance(30)
    assert store.admit(name) == "probe"
    store.record(name, "probe", "neutral")  # e.g. refused by another circuit before the call
    assert store.admit(name) == "probe"


def test_neutral_outcomes_are_not_counted(store: BreakerStore) -> None:
    name = circuit()
    for _ in range(5):
        call(store, name, "neutral")
    assert store.state(name).calls == 0


def test_exactly_one_of_many_concurrent_calls_is_the_probe(
    store: BreakerStore, clock: ManualClock
) -> None:
    name = circuit()
    open_circuit(store, name)
    clock.advance(30)
    admitted: list[str] = []
    refused: list[CircuitOpenError] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            admission = store.admit(name)
        except CircuitOpenError as exc:
            with lock:
                refused.append(exc)
            return
        with lock:
            admitted.append(admission)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert admitted == ["probe"]
    assert len(refused) == 9
