"""A run whose engine stopped is orphaned: its timer falls due and nothing fires it, so once the
threshold has passed it is stuck on that timer; the next engine fires it and the run ends."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest

from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.local.stack import local_engine
from switchyard.local.stuck import stuck_runs
from switchyard.local.workflows import install
from tests.conftest import FIXTURES
from tests.pg import fresh_database
from tests.unit.api.support import handler_environment

FLAKY = FIXTURES / "operations" / "flaky.yaml"
AFTER = 1


def _timer_due(conninfo: str) -> float | None:
    """Seconds since the epoch when the run's retry timer falls due, once it is set."""
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT extract(epoch FROM fire_at) FROM sfn_timers").fetchone()
    return float(row[0]) if row else None


@pytest.mark.slow
def test_a_timer_no_engine_fires_is_stuck_until_an_engine_runs_again() -> None:
    key = uuid.uuid4().hex[:12]
    with fresh_database() as conninfo, handler_environment(conninfo):
        engine = local_engine(conninfo, registry=FunctionRegistry(), workers=2)
        engine.start()
        try:
            with engine.read() as store:
                installed = install(store, engine.arns, FLAKY)
            started = engine.submit(StartExecution(installed.version_arn, "orphan", {"key": key}))
            deadline = time.monotonic() + 20
            while (due := _timer_due(conninfo)) is None:
                assert time.monotonic() < deadline, "the retry's timer was never set"
                time.sleep(0.02)
        finally:
            engine.close()  # the run waits on a timer that nothing will fire

        with psycopg.connect(conninfo, autocommit=True) as conn:
            assert stuck_runs(conn, after_seconds=AFTER) == []  # due in 2 s: still ahead
            time.sleep(max(0.0, due + AFTER + 0.3 - time.time()))
            (orphan,) = stuck_runs(conn, after_seconds=AFTER)
        (wait,) = orphan.waiting_on
        assert orphan.run["run_id"] == "orphan"
        assert (wait.kind, wait.state) == ("timer", "call")
        assert wait.due_at is not None and abs(wait.due_at.timestamp() - due) < 0.01

        engine = local_engine(conninfo, registry=FunctionRegistry(), workers=2)
        engine.start()
        try:
            assert engine.wait(started["executionArn"], timeout=20) == "SUCCEEDED"
        finally:
            engine.close()
        with psycopg.connect(conninfo, autocommit=True) as conn:
            assert stuck_runs(conn, after_seconds=AFTER) == []
