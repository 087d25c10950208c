"""Exactly-once SQL statements: the statement and its idempotency record commit together.

Powertools idempotency records a call's result after the call returns, so a crash between a side
effect and that record leaves the key `INPROGRESS`; once the record expires the call runs again.
For a SQL statement the gap can be closed, as DBOS does for its transactions: the idempotency key
and the statement's result are written to `switchyard_sql_effects` in the target database, in the
statement's own transaction. Either both commit or neither does, so a repeat of the key finds the
stored result (the statement ran) or no row (it did not, and runs now).

The key row is inserted before the statement runs: a concurrent duplicate waits on its lock
and then finds the committed result, or takes over when the first transaction rolled back.
The arguments are hashed under the key: other arguments under the same key are an error, never a
silent replay of another call's result.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from switchyard.contract.step_errors import (
    PermanentError,
    StepError,
    StepTimeoutError,
    TransientError,
)
from switchyard.runtime.tools.base import canonical_json

EFFECTS_TABLE = "switchyard_sql_effects"
EFFECTS_DDL = f"""CREATE TABLE IF NOT EXISTS {EFFECTS_TABLE} (
    key           text PRIMARY KEY,
    payload_hash  text NOT NULL,
    result        jsonb,
    created_at    timestamptz NOT NULL DEFAULT now()
)"""

_created: set[str] = set()
_created_lock = threading.Lock()


def payload_hash(args: dict[str, Any]) -> str:
    """What must not change under a key: the connection, the statement and its parameters."""
    payload = {k: args.get(k) for k in ("connection", "query", "params")}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def ensure_effects_table(conninfo: str, *, connect_timeout: int = 10) -> None:
    """Create the table if missing, once per database and process (its own transaction)."""
    with _created_lock:
        if conninfo in _created:
            return
        try:
            with psycopg.connect(
                conninfo, autocommit=True, connect_timeout=connect_timeout
            ) as conn:
                conn.execute(EFFECTS_DDL)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
            pass  # another process created it at the same moment
        except psycopg.errors.InsufficientPrivilege:
            raise PermanentError(
                f"sql.query: the connection's role may not create {EFFECTS_TABLE}, which records "
                f"idempotent statements; create it once as an owner: {EFFECTS_DDL}"
            ) from None
        except psycopg.OperationalError as exc:
            raise operational_error(exc) from None
        _created.add(conninfo)


def operational_error(exc: psycopg.OperationalError) -> StepError:
    """A database that timed out is `timeout`: the statement ran past its `statement_timeout`
    (its transaction rolled back: no effect) or the connection took too long; the rest of
    `OperationalError` (the server went away, too many connections) is `transient`."""
    message = f"sql.query: {exc}".strip()
    if isinstance(exc, psycopg.errors.QueryCanceled | psycopg.errors.ConnectionTimeout):
        return StepTimeoutError(message)
    return TransientError(message)


def run_once(
    conn: psycopg.Connection[Any],
    key: str,
    digest: str,
    statement: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """`statement()`'s result, committed together with the record of `key` in the transaction
    open on `conn` (not in autocommit); the stored result when the key has one."""
    claimed = conn.execute(
        f"INSERT INTO {EFFECTS_TABLE} (key, payload_hash) VALUES (%s, %s)"
        " ON CONFLICT (key) DO NOTHING RETURNING key",
        (key, digest),
    ).fetchone()
    if claimed is None:
        stored = conn.execute(
            f"SELECT payload_hash, result FROM {EFFECTS_TABLE} WHERE key = %s", (key,)
        ).fetchone()
        conn.rollback()
        return _stored_result(key, digest, stored)
    result = statement()
    if conn.info.transaction_status != TransactionStatus.INTRANS:
        raise PermanentError(
            "sql.query: a statement with side_effect idempotent runs inside switchyard's "
            f"transaction (key {key}) and must not end it (COMMIT, ROLLBACK)"
        )
    conn.execute(f"UPDATE {EFFECTS_TABLE} SET result = %s WHERE key = %s", (Jsonb(result), key))
    conn.commit()
    return result


def _stored_result(key: str, digest: str, stored: tuple[Any, ...] | None) -> dict[str, Any]:
    if stored is None:  # deleted between the two statements (an operator's clean-up)
        raise TransientError(f"sql.query: the record of key {key} vanished; try again")
    stored_digest, result = stored
    if stored_digest != digest:
        raise PermanentError(
            "sql.query was called with other arguments than the first attempt under "
            f"idempotency key {key}"
        )
    if not isinstance(result, dict):
        raise PermanentError(
            f"sql.query: key {key} is recorded without a result (its statement ended "
            "switchyard's transaction itself)"
        )
    return result
