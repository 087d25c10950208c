"""Quota counters on PostgreSQL: table `quota_windows`, one row per counter and window.

A take is one transaction: for each counter, in counter order, read the previous window, then
`UPDATE ... SET used = used + amount WHERE used <= threshold`, which takes the row's lock; a
concurrent take waits and re-checks its condition against the committed count, so two takes
cannot both fit in the same room. A refusal rolls back what the transaction took. Windows older
than the previous one are deleted as the counter moves on, so a counter keeps two or three rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.stores.quota.counters import (
    WINDOW_SECONDS,
    QuotaGrant,
    QuotaStore,
    QuotaTake,
    QuotaUsage,
    ordered,
    refused,
    window_of,
)

SELECT_USED_SQL = "SELECT used FROM quota_windows WHERE counter = %s AND window_start = %s"
INSERT_WINDOW_SQL = (
    "INSERT INTO quota_windows (counter, window_start) VALUES (%s, %s)"
    " ON CONFLICT (counter, window_start) DO NOTHING"
)
TAKE_SQL = (
    "UPDATE quota_windows SET used = used + %(amount)s"
    " WHERE counter = %(counter)s AND window_start = %(window)s AND used <= %(threshold)s"
    " RETURNING used"
)
FORGET_OLD_WINDOWS_SQL = "DELETE FROM quota_windows WHERE counter = %s AND window_start < %s"
ADJUST_SQL = (
    "UPDATE quota_windows SET used = GREATEST(used + %s, 0)"
    " WHERE counter = %s AND window_start = %s"
)


class _RefusedError(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


class PostgresQuotaStore(QuotaStore):
    def __init__(self, pool: ConnectionPool, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock=clock)
        self._pool = pool

    def take(self, takes: Sequence[QuotaTake]) -> QuotaGrant:
        now = self._clock()
        window = window_of(now)
        chosen = ordered(takes)
        try:
            with self._pool.connection() as conn, conn.transaction():
                for take in chosen:
                    self._take(conn, take, window, now)
        except _RefusedError as refusal:
            raise refusal.error from None
        return QuotaGrant(window, tuple(chosen))

    @staticmethod
    def _take(conn: psycopg.Connection[Any], take: QuotaTake, window: int, now: float) -> None:
        previous = _used(conn, take.counter, window - WINDOW_SECONDS)
        usage = QuotaUsage(window, 0, previous, now)
        conn.execute(INSERT_WINDOW_SQL, (take.counter, window))
        row = conn.execute(
            TAKE_SQL,
            {
                "amount": take.amount,
                "counter": take.counter,
                "window": window,
                "threshold": usage.threshold(take),
            },
        ).fetchone()
        if row is None:
            current = _used(conn, take.counter, window)
            raise _RefusedError(refused(take, QuotaUsage(window, current, previous, now)))
        conn.execute(FORGET_OLD_WINDOWS_SQL, (take.counter, window - WINDOW_SECONDS))

    def adjust(self, grant: QuotaGrant, counter: str, delta: int) -> None:
        if delta == 0:
            return
        with self._pool.connection() as conn:
            conn.execute(ADJUST_SQL, (delta, counter, grant.window))

    def usage(self, counter: str) -> QuotaUsage:
        now = self._clock()
        window = window_of(now)
        with self._pool.connection() as conn:
            current = _used(conn, counter, window)
            previous = _used(conn, counter, window - WINDOW_SECONDS)
        return QuotaUsage(window, current, previous, now)


def _used(conn: psycopg.Connection[Any], counter: str, window: int) -> int:
    row = conn.execute(SELECT_USED_SQL, (counter, window)).fetchone()
    return int(row[0]) if row else 0
