"""sql.query with side_effect idempotent: the statement and its idempotency record commit in one
transaction, so a repeat of the key never runs the statement twice, whenever the caller crashed.
Real PostgreSQL; crashes are real processes killed with SIGKILL."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import RunContext
from switchyard.contract.step_errors import PermanentError
from switchyard.model import SideEffect
from switchyard.runtime.tools import (
    CallInfo,
    CallScope,
    GatewayStores,
    ToolEnvironment,
    ToolGateway,
    ToolRegistry,
    ToolRequest,
)
from switchyard.runtime.tools.sql_effects import EFFECTS_TABLE
from switchyard.stores.idempotency import IdempotentCalls, PostgresPersistenceLayer
from tests.pg import fresh_database

REPO = Path(__file__).resolve().parents[4]
INSERT = "INSERT INTO ledger (key, note) VALUES (%(key)s, %(note)s) RETURNING id"


@pytest.fixture
def target() -> Iterator[str]:
    """A database of its own: the tool creates its effects table there."""
    with fresh_database(migrate=False) as conninfo:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE TABLE ledger (id serial PRIMARY KEY, key text, note text)")
        yield conninfo


def ledger(conninfo: str) -> list[tuple[str, str]]:
    with psycopg.connect(conninfo) as conn:
        return [
            (str(k), str(n)) for k, n in conn.execute("SELECT key, note FROM ledger ORDER BY id")
        ]


def effects(conninfo: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (EFFECTS_TABLE,)).fetchone()
        if found is None or found[0] is None:
            return []
        return [str(row[0]) for row in conn.execute(f"SELECT key FROM {EFFECTS_TABLE}")]


def call(key: str, side_effect: SideEffect | None = SideEffect.IDEMPOTENT) -> CallInfo:
    return CallInfo("run-1", "book", key, timeout=10.0, side_effect=side_effect)


def sql(conninfo: str, args: dict[str, Any], info: CallInfo) -> Any:
    env = ToolEnvironment(sql_connections={"books": conninfo})
    return ToolRegistry().get("sql.query").invoke({"connection": "books", **args}, env, info)


def booking(note: str = "paid", key: str = "k") -> dict[str, Any]:
    return {"query": INSERT, "params": {"key": key, "note": note}}


def test_a_repeated_key_returns_the_stored_result_without_running_again(target: str) -> None:
    first = sql(target, booking(), call("run-1:book"))
    again = sql(target, booking(), call("run-1:book"))
    assert again == first == {"rows": [{"id": 1}], "rowcount": 1}
    assert ledger(target) == [("k", "paid")]
    assert effects(target) == ["run-1:book"]


def test_other_arguments_under_the_same_key_are_an_error(target: str) -> None:
    sql(target, booking("paid"), call("run-1:book"))
    with pytest.raises(PermanentError, match="other arguments"):
        sql(target, booking("refunded"), call("run-1:book"))
    assert ledger(target) == [("k", "paid")]


def test_a_failed_statement_records_nothing_and_runs_when_tried_again(target: str) -> None:
    failing = {
        "query": "INSERT INTO ledger (key, note) VALUES (%(key)s, 1/0)",
        "params": {"key": "k"},
    }
    with pytest.raises(PermanentError, match="division by zero"):
        sql(target, failing, call("run-1:book"))
    assert effects(target) == []
    assert sql(target, booking(), call("run-1:book"))["rowcount"] == 1
    assert ledger(target) == [("k", "paid")]


def test_reads_and_direct_calls_are_not_recorded(target: str) -> None:
    sql(target, booking("a"), call("run-1:read", SideEffect.NONE))
    sql(target, booking("a"), call("run-1:read", SideEffect.NONE))
    sql(target, booking("b"), call("run-1:direct", None))
    assert [note for _, note in ledger(target)] == ["a", "a", "b"]
    assert effects(target) == []


def test_concurrent_duplicates_run_the_statement_once(target: str) -> None:
    slow = {
        "query": "INSERT INTO ledger (key, note) SELECT %(key)s, 'slow' FROM pg_sleep(0.3)"
        " RETURNING id",
        "params": {"key": "k"},
    }
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda: results.append(sql(target, slow, call("run-1:book"))))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert ledger(target) == [("k", "slow")]


def test_a_statement_may_not_end_switchyards_transaction(target: str) -> None:
    with pytest.raises(PermanentError, match="must not end it"):
        sql(target, {"query": "COMMIT"}, call("run-1:commit"))
    with pytest.raises(PermanentError, match="without a result"):
        sql(target, {"query": "COMMIT"}, call("run-1:commit"))


def test_a_role_that_may_not_create_the_table_is_told_how(target: str) -> None:
    role = f"sy_reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    try:
        with pytest.raises(PermanentError, match="CREATE TABLE IF NOT EXISTS"):
            sql(f"{target} user={role}", {"query": "SELECT 1"}, call("run-1:denied"))
    finally:
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


# --- crashes: a real process dies with SIGKILL around the commit ---------------------------

CRASHING_CALLER = """
import json, os, signal, sys
import psycopg
from switchyard.model import SideEffect
from switchyard.runtime.tools import CallInfo, ToolEnvironment, ToolRegistry

conninfo, args, when = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
commit = psycopg.Connection.commit

def dying_commit(self):
    if self.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
        return commit(self)  # not the statement's transaction
    if when == "after_commit":
        commit(self)
    os.kill(os.getpid(), signal.SIGKILL)

psycopg.Connection.commit = dying_commit
env = ToolEnvironment(sql_connections={"books": conninfo})
info = CallInfo("run-1", "book", "run-1:book", 10.0, SideEffect.IDEMPOTENT)
ToolRegistry().get("sql.query").invoke({"connection": "books", **args}, env, info)
"""


def crash_while_calling(conninfo: str, args: dict[str, Any], when: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_CALLER, conninfo, json.dumps(args), when],
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == -9, done.stderr.decode()


def test_a_caller_killed_after_the_commit_is_answered_from_the_record(target: str) -> None:
    crash_while_calling(target, booking(), "after_commit")
    assert ledger(target) == [("k", "paid")]  # the effect happened; nobody heard the answer
    assert sql(target, booking(), call("run-1:book")) == {"rows": [{"id": 1}], "rowcount": 1}
    assert ledger(target) == [("k", "paid")]


def test_a_caller_killed_before_the_commit_left_nothing_and_the_retry_runs(target: str) -> None:
    crash_while_calling(target, booking(), "before_commit")
    assert ledger(target) == [] and effects(target) == []
    assert sql(target, booking(), call("run-1:book"))["rowcount"] == 1
    assert ledger(target) == [("k", "paid")]


def test_the_gateway_leaves_idempotent_sql_to_the_tool_not_to_powertools(
    target: str, pg_pool: ConnectionPool
) -> None:
    """A Powertools in-progress record left by a crash would block the key until it expires, then
    let the statement run twice; sql.query's own record answers at once, and only once."""
    run = RunContext(id=f"run-{uuid.uuid4().hex[:8]}", workflow="w", version=1,
                     started_at="2026-01-01T00:00:00Z")  # fmt: skip
    gateway = ToolGateway(
        ToolRegistry(),
        stores=GatewayStores(idempotency=IdempotentCalls(PostgresPersistenceLayer(pg_pool))),
        env=ToolEnvironment(sql_connections={"books": target}),
    )
    scope = CallScope(run=run, step_id="book", idempotency_key=f"{run.id}:book")
    request = ToolRequest("sql.query", {"connection": "books", **booking()})
    first = gateway.call(request, scope)
    assert gateway.call(request, scope) == first
    assert ledger(target) == [("k", "paid")]
    assert effects(target) == [f"{run.id}:book"]
    with pg_pool.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM idempotency_records WHERE key LIKE %s", (f"%{run.id}%",)
        ).fetchone()
    assert row is not None and row[0] == 0
