"""Python tools of the workflows in `workflows/`, run inside the engine process."""

from __future__ import annotations

import os
import time

import psycopg

from switchyard.contract.step_errors import TransientError

LEDGER_ENV = "SWITCHYARD_SQL_LEDGER"
SLOW_SECONDS = 2.0


def fail_once(run: str) -> dict[str, str]:
    """Fails `transient` the first time it is called for `run`, so the step's retry waits on a
    durable timer; the mark is committed before the failure, whatever happens next."""
    with psycopg.connect(os.environ[LEDGER_ENV], autocommit=True) as conn:
        first = conn.execute(
            "INSERT INTO crash_flaky (run_id) VALUES (%s) ON CONFLICT DO NOTHING RETURNING run_id",
            (run,),
        ).fetchone()
    if first is not None:
        raise TransientError(f"the first call for {run} fails on purpose")
    return {"run": run}


def slow_append(key: str) -> dict[str, int]:
    """Marks that the call started (committed at once), waits, then appends `key` to the ledger."""
    with psycopg.connect(os.environ[LEDGER_ENV], autocommit=True) as conn:
        conn.execute("INSERT INTO crash_started (key) VALUES (%s)", (key,))
        time.sleep(SLOW_SECONDS)
        row = conn.execute(
            "INSERT INTO crash_ledger (key, run_id, step) VALUES (%s, %s, 'append') RETURNING id",
            (key, key.split(":")[0]),
        ).fetchone()
    assert row is not None
    return {"id": int(row[0])}
