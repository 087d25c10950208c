"""The engine waits out a lost database connection and never lets two engines commit: backends
terminated in the middle of batches lose no run and apply nothing twice; the engine reports
itself unhealthy meanwhile and logs the outage once, not a traceback per batch; an engine whose
lock died with its connection is fenced off by the engine that took the database over."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest

from switchyard.engine import errors, fencing, machines
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.local.stack import engine_process, local_engine
from tests.pg import fresh_database
from tests.pg_private import private_server

FN = "arn:aws:states:::lambda:invoke"
THREE_STEPS = {
    "StartAt": "A",
    "States": {
        name: {
            "Type": "Task",
            "Resource": FN,
            "Parameters": {"FunctionName": "count", "Payload": {"step": name, "run.$": "$.run"}},
            "ResultPath": f"$.{name}",
            **({"Next": following} if following else {"End": True}),
        }
        for name, following in (("A", "B"), ("B", "C"), ("C", None))
    },
}


class Calls:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: Counter[tuple[str, str]] = Counter()

    def registry(self) -> FunctionRegistry:
        registry = FunctionRegistry()

        def count(event: Any, context: Any) -> Any:
            with self.lock:
                self.seen[(event["run"], event["step"])] += 1
            return {"ok": True}

        registry.register("count", count)
        return registry


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database() as conninfo:
        yield conninfo


def terminate_backends(conninfo: str, *, only: int | None = None) -> int:
    """What an operator's `pg_terminate_backend` does to every connection of the database (or
    to one backend)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if only is not None:
            conn.execute("SELECT pg_terminate_backend(%s)", (only,))
            return 1
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        return len(rows)


def install_machine(engine: Engine) -> str:
    with engine.read() as store:
        created = machines.create(
            store, engine.arns, name=f"m-{uuid.uuid4().hex[:8]}", definition=json.dumps(THREE_STEPS)
        )
    return str(created["stateMachineArn"])


def start_runs(engine: Engine, arn: str, runs: list[str]) -> list[str]:
    def one(name: str) -> str:
        return str(engine.submit(StartExecution(arn, name, {"run": name}))["executionArn"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, runs))


def entered_twice(conninfo: str) -> list[tuple[int, str]]:
    """(execution, state) pairs whose state was entered more than once: a double commit."""
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT execution_id, details->'stateEnteredEventDetails'->>'name', count(*)"
            " FROM sfn_history"
            " WHERE type = 'TaskStateEntered' GROUP BY 1, 2 HAVING count(*) > 1"
        ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def wait_until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_connections_terminated_mid_batch_lose_no_run_and_repeat_no_step(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    calls = Calls()
    engine = local_engine(database, registry=calls.registry(), workers=8)
    engine.start()
    kills: list[int] = []

    def killer() -> None:
        rng = random.Random(7)
        for _ in range(8):
            time.sleep(rng.uniform(0.05, 0.2))
            kills.append(terminate_backends(database))

    caplog.set_level(logging.INFO, logger="switchyard")
    thread = threading.Thread(target=killer)
    arn = install_machine(engine)
    thread.start()
    names: list[str] = []
    executions: list[str] = []
    while thread.is_alive():  # runs keep coming while backends are terminated
        wave = [f"run-{len(names) + i}" for i in range(20)]
        names += wave
        executions += start_runs(engine, arn, wave)
    thread.join()
    statuses = [engine.wait(execution, timeout=60) for execution in executions]
    try:
        assert len(kills) == 8
        assert statuses == ["SUCCEEDED"] * len(names)
        assert entered_twice(database) == []
        assert {key: n for key, n in calls.seen.items() if n != 1} == {}
        assert len(calls.seen) == 3 * len(names)
        wait_until(lambda: engine.healthy)
        lost = [r for r in caplog.records if "lost the database" in r.getMessage()]
        back = [r for r in caplog.records if "has the database back" in r.getMessage()]
        assert 1 <= len(lost) <= len(kills) and len(back) >= 1
        assert [r for r in caplog.records if r.exc_info] == []  # no traceback per batch
    finally:
        engine.close()


def test_the_engine_is_unhealthy_while_the_database_is_gone_and_waits_without_spinning(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A database that refuses connections (here: this database's connections are refused by
    `ALLOW_CONNECTIONS false`, which a restart or an outage looks like to a client): the engine
    reports itself unhealthy, attempts few reconnections (backoff), and is back when it is."""
    calls = Calls()
    engine = local_engine(database, registry=calls.registry(), workers=2)
    engine.start()
    name = database.rsplit("dbname=", 1)[1]
    admin = database.rsplit("dbname=", 1)[0] + "dbname=postgres"
    caplog.set_level(logging.INFO, logger="switchyard")
    try:
        arn = install_machine(engine)
        assert engine.healthy
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            terminate_backends(admin.replace("dbname=postgres", f"dbname={name}"))
        except psycopg.OperationalError:  # the database refuses us too: terminate from admin
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
        submitted = threading.Thread(
            target=lambda: engine.submit(StartExecution(arn, "during", {"run": "during"}))
        )
        submitted.start()
        wait_until(lambda: not engine.healthy, timeout=10)
        time.sleep(3)
        assert not engine.healthy
        failures = engine._outage.failures
        assert 1 <= failures <= 25  # capped, jittered backoff: a few attempts, not a spin
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        submitted.join(timeout=30)
        assert not submitted.is_alive()
        wait_until(lambda: engine.healthy, timeout=15)
        execution = arn.replace(":stateMachine:", ":execution:") + ":during"
        assert engine.wait(execution, timeout=30) == "SUCCEEDED"
        lost = [r for r in caplog.records if "lost the database" in r.getMessage()]
        assert len(lost) == 1
        assert [r for r in caplog.records if r.exc_info] == []
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        engine.close()


def lock_backend(conninfo: str) -> int:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database ="
            " (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_engine_that_lost_its_lock_is_fenced_off_by_the_one_that_took_over(
    database: str,
) -> None:
    """The first engine's lock connection is killed; a second engine waiting for the lock takes
    it and claims the database. The first may not commit again: its commands are refused, it is
    unhealthy, and every run finishes with each step entered once."""
    calls = Calls()
    first = engine_process(database)
    first.engine.registry = calls.registry()
    first.engine._dispatcher._registry = first.engine.registry
    assert first.start(wait=False)
    second = engine_process(database)
    second.engine.registry = calls.registry()
    second.engine._dispatcher._registry = second.engine.registry
    try:
        arn = install_machine(first.engine)
        before = start_runs(first.engine, arn, [f"before-{i}" for i in range(20)])
        taken = threading.Thread(target=lambda: second.start(wait=True))
        taken.start()
        time.sleep(0.5)
        assert taken.is_alive()  # the second waits for the lock
        terminate_backends(database, only=lock_backend(database))
        taken.join(timeout=30)
        assert second.engine.healthy
        with pytest.raises(errors.ServiceUnavailable):  # fenced off: stepped down or refuses
            wait_until(lambda: not first.engine.healthy, timeout=10)
            first.engine.submit(StartExecution(arn, "late", {"run": "late"}), timeout=10)
        with psycopg.connect(database) as conn:
            assert conn.execute(
                "SELECT count(*) FROM sfn_executions WHERE name = 'late'"
            ).fetchone() == (0,)
        after = start_runs(second.engine, arn, [f"after-{i}" for i in range(20)])
        for execution in before + after:
            assert second.engine.wait(execution, timeout=60) == "SUCCEEDED"
        assert entered_twice(database) == []
    finally:
        second.close()
        first.close()


def test_a_commit_with_a_stale_epoch_is_rolled_back(database: str) -> None:
    with psycopg.connect(database) as owner, psycopg.connect(database) as usurper:
        epoch = fencing.claim(owner)
        fencing.claim(usurper)
        with pytest.raises(fencing.FencedOffError), owner.transaction():
            owner.execute("INSERT INTO engine_commands (kind, payload) VALUES ('x', '{}')")
            fencing.Check(owner, epoch, 1).verify()
        assert owner.execute("SELECT count(*) FROM engine_commands").fetchone() == (0,)


def test_a_postgresql_restart_under_load_loses_no_run() -> None:
    """On a server of the test's own, restarted three times while runs go through."""
    with private_server() as server:
        calls = Calls()
        engine = local_engine(server.conninfo, registry=calls.registry(), workers=8)
        engine.start()
        try:
            arn = install_machine(engine)
            names: list[str] = []
            executions: list[str] = []
            for restart in range(3):
                wave = [f"run-{restart}-{i}" for i in range(30)]
                names += wave
                starting = ThreadPoolExecutor(max_workers=1).submit(start_runs, engine, arn, wave)
                server.restart()
                executions += starting.result(timeout=60)
            statuses = [engine.wait(execution, timeout=60) for execution in executions]
            assert statuses == ["SUCCEEDED"] * len(names)
            assert entered_twice(server.conninfo) == []
            assert len(calls.seen) == 3 * len(names)
            assert {key: n for key, n in calls.seen.items() if n != 1} == {}
            wait_until(lambda: engine.healthy)
        finally:
            engine.close()


def test_a_task_that_lost_its_database_connection_is_called_again(database: str) -> None:
    """The handler's own connection was lost (wrapped, as step errors wrap it): the engine calls
    it again rather than failing the step, which has no Retry."""
    attempts: list[int] = []
    registry = FunctionRegistry()

    def count(event: Any, context: Any) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            try:
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            except psycopg.OperationalError:
                raise RuntimeError("transient: the ledger write failed") from None
        return {"ok": True}

    registry.register("count", count)
    engine = local_engine(database, registry=registry, workers=2)
    engine.start()
    try:
        arn = install_machine(engine)
        (execution,) = start_runs(engine, arn, ["once"])
        assert engine.wait(execution, timeout=30) == "SUCCEEDED"
        assert len(attempts) == 4  # A twice, then B and C
    finally:
        engine.close()


def test_two_engines_through_a_postgresql_restart_never_both_commit() -> None:
    """The owner and a second engine waiting for the lock, on a server restarted twice: after
    each restart exactly one of them owns the database (whichever took the lock first), and
    every run finishes with each step entered once."""
    with private_server() as server:
        processes = [engine_process(server.conninfo), engine_process(server.conninfo)]
        calls = Calls()
        for process in processes:
            process.engine.registry = calls.registry()
            process.engine._dispatcher._registry = process.engine.registry
        assert processes[0].start(wait=False)
        waiting = threading.Thread(target=lambda: processes[1].start(wait=True), daemon=True)
        waiting.start()
        try:
            arn = install_machine(processes[0].engine)
            executions = start_runs(processes[0].engine, arn, [f"a-{i}" for i in range(20)])
            for _ in range(2):
                server.restart()

                def one_owner() -> bool:
                    healthy = [p.engine.healthy for p in processes]
                    return healthy.count(True) == 1

                wait_until(one_owner, timeout=30)
                time.sleep(1.5)  # the other has noticed by now (it checks its lock every second)
                assert one_owner()
            owner = next(p for p in processes if p.engine.healthy)
            executions += start_runs(owner.engine, arn, [f"b-{i}" for i in range(20)])
            for execution in executions:
                assert owner.engine.wait(execution, timeout=60) == "SUCCEEDED"
            assert entered_twice(server.conninfo) == []
            # A takeover re-dispatches the tasks the other engine had in flight: at least once,
            # as after a crash (side effects are kept once by idempotency keys, not shown here).
            assert len(calls.seen) == 3 * len(executions)
        finally:
            for process in processes:
                process.close()


def test_a_pipelined_commit_with_a_stale_epoch_fails_on_the_server(database: str) -> None:
    """The coordinator's batches read no fence before their COMMIT: the stale fence fails the
    transaction on the server, and the engine knows that failure for what it is."""
    with psycopg.connect(database) as owner, psycopg.connect(database) as usurper:
        epoch = fencing.claim(owner)
        fencing.claim(usurper)
        with pytest.raises(psycopg.Error) as failed, owner.pipeline(), owner.transaction():
            fencing.hold(owner, epoch, 1)
            owner.execute("INSERT INTO engine_commands (kind, payload) VALUES ('x', '{}')")
        assert fencing.is_fenced_off(failed.value)
        assert owner.execute("SELECT count(*) FROM engine_commands").fetchone() == (0,)
        current = fencing.claim(usurper)
        with owner.pipeline(), owner.transaction():
            fencing.hold(owner, current, 2)  # the current epoch: no error, the batch commits
            owner.execute("INSERT INTO engine_commands (kind, payload) VALUES ('x', '{}')")
        assert owner.execute("SELECT count(*) FROM engine_commands").fetchone() == (1,)
