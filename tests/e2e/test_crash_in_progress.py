"""An idempotent tool call (Powertools idempotency, any tool but sql.query) that is running when
the engine dies must run again after the restart, once: the call that held its key died with
the engine, so nothing is in progress any more."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg

from tests.e2e.engine_chaos import (
    EngineUnderTest,
    diagnose,
    prepare,
    start,
    wait_for_owner,
    wait_until_finished,
)
from tests.pg import fresh_database

WORKFLOW = Path(__file__).resolve().parent / "workflows" / "crash-in-progress.yaml"


def test_an_idempotent_call_in_flight_at_a_crash_runs_once_after_the_restart(
    tmp_path: Path,
) -> None:
    with fresh_database() as conninfo:
        version_arn = prepare(conninfo, WORKFLOW)
        engine = EngineUnderTest(conninfo, tmp_path)
        with psycopg.connect(conninfo, autocommit=True) as watch:
            try:
                engine.spawn()
                wait_for_owner(conninfo, engine)
                start(conninfo, version_arn, "in-flight", {})
                deadline = time.monotonic() + 30
                while not watch.execute("SELECT 1 FROM crash_started").fetchone():
                    assert time.monotonic() < deadline, "the tool call never started"
                    time.sleep(0.01)
                engine.kill()  # mid-call: the Powertools record of its key is INPROGRESS
                engine.spawn()
                wait_until_finished(watch, ["in-flight"], 30)
            finally:
                engine.stop()
            row = watch.execute(
                "SELECT id, status FROM sfn_executions WHERE name = 'in-flight'"
            ).fetchone()
            assert row is not None
            appended = watch.execute("SELECT count(*) FROM crash_ledger").fetchone()
            assert row[1] == "SUCCEEDED", diagnose(watch, int(row[0]))
            assert appended == (1,)
