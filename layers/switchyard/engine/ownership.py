"""One engine owns a database at a time: a PostgreSQL advisory lock held on its own connection.

A second engine waits for the lock; when the owner dies its connection closes, the lock is
released, and the waiting engine takes over (and recovers the open executions)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

ENGINE_LOCK = 0x5357_454E  # "SWEN"


class Ownership:
    def __init__(self, conninfo: str, *, poll_seconds: float = 0.25) -> None:
        self._conninfo = conninfo
        self._poll = poll_seconds
        self._conn: psycopg.Connection[Any] | None = None

    def acquire(self, *, wait: bool = True, stop: threading.Event | None = None) -> bool:
        """Take the lock; with `wait`, poll until it is free (or `stop` is set)."""
        conn = psycopg.connect(self._conninfo, autocommit=True)
        while True:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (ENGINE_LOCK,)).fetchone()
            if row and row[0]:
                self._conn = conn
                return True
            if not wait or (stop is not None and stop.is_set()):
                conn.close()
                return False
            time.sleep(self._poll)

    def release(self) -> None:
        if self._conn is not None:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (ENGINE_LOCK,))
            finally:
                self._conn.close()
                self._conn = None

    @property
    def held(self) -> bool:
        return self._conn is not None and not self._conn.closed

    @staticmethod
    def owner_pid(conninfo: str) -> int | None:
        """The backend pid holding the engine lock, if any (for `switchyard engine status`)."""
        with psycopg.connect(conninfo, autocommit=True) as conn:
            row = conn.execute(  # advisory locks are per database; others may have engines too
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND objid = %s AND classid = 0"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (ENGINE_LOCK & 0xFFFFFFFF,),
            ).fetchone()
            return int(row[0]) if row else None
