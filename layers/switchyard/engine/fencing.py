"""Fencing: every commit of the engine proves it still owns the database.

The advisory lock (`ownership.py`) decides which engine should run; it lives on a connection, so
it is lost with that connection, possibly while the engine's coordinator still has a working one.
The epoch in `engine_fence` closes that gap. An engine takes an epoch when it starts (or takes the
database back), and each of its transactions begins with `FENCE_SQL`, an update of the fence row
that holds only while the epoch is still its own. A new owner's `CLAIM_SQL` updates the same row,
so it waits for every open transaction of the old owner; once the claim is committed, the old
owner's fence update matches no row and its transaction is rolled back (`FencedOffError`).

In the coordinator's pipelined batches the fence is `HOLD_SQL` instead, which fails on the server
when the epoch is no longer this engine's: the pipeline is aborted there, the COMMIT queued behind
it is never run, and the batch needs no read of the fence before its commit (one round trip less).

The fence update also records the transaction's number (`batch`): when the connection dies during
a commit, the engine reads it back after reconnecting to learn whether the commit happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

CLAIM_SQL = "UPDATE engine_fence SET epoch = epoch + 1, batch = 0 RETURNING epoch"
RECLAIM_SQL = (
    "UPDATE engine_fence SET epoch = epoch + 1, batch = 0 WHERE epoch = %s RETURNING epoch"
)
FENCE_SQL = "UPDATE engine_fence SET batch = %s WHERE epoch = %s RETURNING epoch"
STATE_SQL = "SELECT epoch, batch FROM engine_fence"
FENCED_OFF = "engine fenced off: another engine owns this database"
HOLD_SQL = (
    "WITH fence AS (UPDATE engine_fence SET batch = %s WHERE epoch = %s RETURNING epoch)"
    f" SELECT CAST(CASE WHEN count(*) = 1 THEN '1' ELSE '{FENCED_OFF}' END AS integer) FROM fence"
)


class FencedOffError(Exception):
    """Another engine has taken the database over: this one must not commit again."""

    def __init__(self, epoch: int) -> None:
        super().__init__(
            f"another engine took this database over (this engine's epoch {epoch} is stale);"
            " this engine stopped committing"
        )
        self.epoch = epoch


@dataclass(frozen=True)
class FenceState:
    epoch: int
    batch: int


def claim(conn: psycopg.Connection[Any]) -> int:
    """A new epoch, fencing off every engine that held an older one (commits the claim)."""
    with conn.transaction():
        row = conn.execute(CLAIM_SQL).fetchone()
    if row is None:
        raise RuntimeError("the engine_fence row is missing; run `switchyard db migrate`")
    return int(row[0])


def reclaim(conn: psycopg.Connection[Any], epoch: int) -> int | None:
    """The next epoch if `epoch` is still current (no other engine owned the database since, so
    this engine's memory is still true), else None (commits the claim)."""
    with conn.transaction():
        row = conn.execute(RECLAIM_SQL, (epoch,)).fetchone()
    return None if row is None else int(row[0])


def state(conn: psycopg.Connection[Any]) -> FenceState:
    with conn.transaction():
        row = conn.execute(STATE_SQL).fetchone()
    if row is None:
        raise RuntimeError("the engine_fence row is missing; run `switchyard db migrate`")
    return FenceState(int(row[0]), int(row[1]))


class Check:
    """The fence of one transaction: sent first (its row lock lasts until the commit) and read
    before the commit, so that in a pipeline it costs no extra round trip."""

    def __init__(self, conn: psycopg.Connection[Any], epoch: int, batch: int) -> None:
        self._epoch = epoch
        self._cursor = conn.cursor()
        self._cursor.execute(FENCE_SQL, (batch, epoch))

    def verify(self) -> None:
        if self._cursor.fetchone() is None:
            raise FencedOffError(self._epoch)


def hold(conn: psycopg.Connection[Any], epoch: int, batch: int) -> None:
    """Send the fence of a pipelined transaction: if the epoch is stale, the statement fails on
    the server and so does the transaction (`is_fenced_off` tells that error)."""
    conn.execute(HOLD_SQL, (batch, epoch))


def is_fenced_off(error: BaseException) -> bool:
    """Whether `error` is `hold`'s failure (or the abort it caused, with it as the cause)."""
    while error is not None:
        if isinstance(error, psycopg.errors.InvalidTextRepresentation) and FENCED_OFF in str(error):
            return True
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return False
