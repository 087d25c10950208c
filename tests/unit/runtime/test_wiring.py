"""The services a handler process builds from its environment, once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from switchyard.constants import DATABASE_URL_ENV
from switchyard.runtime import database, wiring


@pytest.fixture
def fresh_wiring(pg_conninfo: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Wiring from a clean slate on the test database; the pools it builds, counted."""
    built: list[Any] = []

    class CountedPool(database.ConnectionPool):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built.append(self)
            time.sleep(0.05)  # a slow connect: the other threads' first calls arrive meanwhile
            super().__init__(*args, **kwargs)

    monkeypatch.setenv(DATABASE_URL_ENV, pg_conninfo)
    monkeypatch.setattr(database, "ConnectionPool", CountedPool)
    wiring.step_services.cache_clear()
    wiring.database_pool.cache_clear()
    try:
        yield built
    finally:
        for pool in built:
            pool.close()
        wiring.step_services.cache_clear()
        wiring.database_pool.cache_clear()


def test_handlers_called_at_once_from_many_threads_share_one_pool_and_one_set_of_services(
    fresh_wiring: list[Any],
) -> None:
    """The local engine's first burst of tasks calls every handler at once."""
    barrier = threading.Barrier(8)
    services: list[Any] = []

    def first_invocation() -> None:
        barrier.wait()
        services.append(wiring.step_services())

    threads = [threading.Thread(target=first_invocation) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fresh_wiring) == 1
    assert len({id(s) for s in services}) == 1
    assert services[0].ledger is not None  # on the database: budgets are enforced


def test_cache_clear_builds_anew_from_the_environment(fresh_wiring: list[Any]) -> None:
    first = wiring.database_pool()
    assert wiring.database_pool() is first
    wiring.database_pool.cache_clear()
    assert wiring.database_pool() is not first
    assert len(fresh_wiring) == 2


def test_the_pool_holds_at_most_switchyard_pool_size_connections(
    fresh_wiring: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from switchyard.constants import DEFAULT_POOL_SIZE, POOL_SIZE_ENV

    monkeypatch.setenv(POOL_SIZE_ENV, "3")
    pool = wiring.database_pool()
    assert pool is not None and pool.max_size == 3
    wiring.database_pool.cache_clear()
    monkeypatch.delenv(POOL_SIZE_ENV)
    pool = wiring.database_pool()
    assert pool is not None and pool.max_size == DEFAULT_POOL_SIZE == 8
