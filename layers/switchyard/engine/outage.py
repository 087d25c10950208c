"""Waiting out a database outage: which errors are one, how long to wait between attempts, and
what to log (once when the database goes, once when it is back, never a traceback per batch).

The idea is DBOS's `db_retry`: a lost connection is a wait, not a failure and not a spin."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
import psycopg_pool


def is_connection_fault(error: BaseException, conn: psycopg.Connection[Any] | None = None) -> bool:
    """The database cannot be reached or dropped the connection: waiting and reconnecting will
    help. A deadlock, a constraint violation or a bad query will not: those are not faults of
    this kind. (SQLSTATE class 08 is a connection exception, 57P an administrator's shutdown or
    a server starting up; no SQLSTATE at all is a client-side failure to connect or read.)"""
    if conn is not None and (conn.closed or conn.broken):
        return True
    if isinstance(error, psycopg_pool.PoolTimeout | psycopg.InterfaceError):
        return True
    if isinstance(error, psycopg.OperationalError):
        state = error.sqlstate
        return state is None or state.startswith(("08", "57P"))
    return False


@dataclass
class Backoff:
    """Capped exponential backoff with full jitter: attempt n waits uniform(0, min(cap,
    base * 2**n)), never less than `floor` so that a dead database is never polled in a loop."""

    base: float = 0.1
    cap: float = 5.0
    floor: float = 0.05
    attempts: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def next(self) -> float:
        ceiling = min(self.cap, self.base * 2**self.attempts)
        self.attempts += 1
        return max(self.floor, self.rng.uniform(0, ceiling))

    def reset(self) -> None:
        self.attempts = 0


class Outage:
    """Logs an outage once when it starts and once when it ends, with what it cost."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._log = logger
        self._what = what
        self._since: float | None = None
        self.failures = 0
        self.outages = 0

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def failed(self, error: BaseException) -> None:
        self.failures += 1
        if self._since is None:
            self._since = time.monotonic()
            self.outages += 1
            text = str(error).strip()
            reason = text.splitlines()[0] if text else type(error).__name__
            self._log.warning(
                "%s lost the database (%s); waiting for it, retrying with backoff",
                self._what,
                reason,
            )

    def recovered(self, detail: str = "") -> None:
        if self._since is None:
            return
        took = time.monotonic() - self._since
        self._log.warning(
            "%s has the database back after %.1f s and %d failed attempts%s",
            self._what,
            took,
            self.failures,
            f"; {detail}" if detail else "",
        )
        self._since = None
        self.failures = 0
