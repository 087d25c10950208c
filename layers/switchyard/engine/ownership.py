"""One engine owns a database at a time: a PostgreSQL advisory lock held on its own connection.

A second engine waits for the lock; when the owner dies its connection closes, the lock is
released, and the waiting engine takes over (and recovers the open executions). The lock also goes
when only its connection dies (a terminated backend, a restarted server) while the engine lives:
the engine notices (`alive`), stops committing, and takes the lock back if no one else has; the
fencing epoch (`fencing.py`) makes sure two engines never both commit in the meantime."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import psycopg

from switchyard.engine.outage import Backoff, is_connection_fault

ENGINE_LOCK = 0x5357_454E  # "SWEN"


class Ownership:
    def __init__(self, conninfo: str, *, poll_seconds: float = 0.25) -> None:
        self._conninfo = conninfo
        self._poll = poll_seconds
        self._conn: psycopg.Connection[Any] | None = None

    def acquire(self, *, wait: bool = True, stop: threading.Event | None = None) -> bool:
        """Take the lock; with `wait`, poll until it is free (or `stop` is set), waiting out a
        database that goes away meanwhile (without `wait`, its error is raised)."""
        backoff = Backoff()
        while True:
            try:
                return self._poll_lock(wait=wait, stop=stop)
            except psycopg.Error as exc:
                if not wait or not is_connection_fault(exc):
                    raise
            pause = backoff.next()
            if stop is not None:
                if stop.wait(pause):
                    return False
            else:
                time.sleep(pause)

    def _poll_lock(self, *, wait: bool, stop: threading.Event | None) -> bool:
        conn = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10)
        try:
            while True:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (ENGINE_LOCK,)).fetchone()
                if row and row[0]:
                    self._conn = conn
                    return True
                if not wait or (stop is not None and stop.is_set()):
                    conn.close()
                    return False
                time.sleep(self._poll)
        except BaseException:
            conn.close()
            raise

    def alive(self) -> bool:
        """Whether the lock is still held: its connection answers (a dead one is let go)."""
        if self._conn is None:
            return False
        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error:
            self.forget()
            return False
        return True

    def forget(self) -> None:
        """Let go of a connection that lost the lock with it (the server already released it)."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):  # a broken connection
                self._conn.close()
            self._conn = None

    def release(self) -> None:
        if self._conn is not None:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (ENGINE_LOCK,))
            except psycopg.Error:
                pass  # a lost connection took the lock with it
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
