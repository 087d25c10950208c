"""Circuit breakers on PostgreSQL: table `circuit_breakers`, one row per circuit.

A change is one transaction: the row is locked (`SELECT ... FOR UPDATE`, inserted first when
new), the algorithm computes the next state from it, and the row is updated; concurrent changes
of one circuit queue on its lock, so a half-open circuit lets exactly one probe through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.stores.breaker.breakers import (
    DEFAULT_POLICY,
    BreakerPolicy,
    BreakerState,
    BreakerStore,
)

COLUMNS = "state, window_start, calls, failures, open_until, probe_until, opened, version"
SELECT_SQL = f"SELECT {COLUMNS} FROM circuit_breakers WHERE circuit = %s"
INSERT_SQL = "INSERT INTO circuit_breakers (circuit) VALUES (%s) ON CONFLICT (circuit) DO NOTHING"
LOCK_SQL = SELECT_SQL + " FOR UPDATE"
UPDATE_SQL = (
    "UPDATE circuit_breakers SET state = %s, window_start = %s, calls = %s, failures = %s,"
    " open_until = %s, probe_until = %s, opened = %s, version = version + 1, updated_at = now()"
    " WHERE circuit = %s RETURNING version"
)


def _state(row: Any) -> BreakerState:
    if row is None:
        return BreakerState()
    return BreakerState(
        state=row[0],
        window=int(row[1]),
        calls=int(row[2]),
        failures=int(row[3]),
        open_until=float(row[4]),
        probe_until=float(row[5]),
        opened=int(row[6]),
        version=int(row[7]),
    )


class PostgresBreakerStore(BreakerStore):
    def __init__(
        self,
        pool: ConnectionPool,
        *,
        policy: BreakerPolicy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(policy=policy, clock=clock)
        self._pool = pool

    def _read(self, circuit: str) -> BreakerState:
        with self._pool.connection() as conn:
            return _state(conn.execute(SELECT_SQL, (circuit,)).fetchone())

    def _change(
        self, circuit: str, change: Callable[[BreakerState], BreakerState | None]
    ) -> tuple[BreakerState, BreakerState]:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(INSERT_SQL, (circuit,))
            before = _state(conn.execute(LOCK_SQL, (circuit,)).fetchone())
            after = change(before)
            if after is None:
                return before, before
            row = conn.execute(
                UPDATE_SQL,
                (
                    after.state,
                    after.window,
                    after.calls,
                    after.failures,
                    after.open_until,
                    after.probe_until,
                    after.opened,
                    circuit,
                ),
            ).fetchone()
        assert row is not None
        return before, replace(after, version=int(row[0]))
