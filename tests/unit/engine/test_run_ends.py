"""Every run's end is recorded: a run stopped by max_duration is `timed_out` in its record (what
`runs list`, `runs show` and the API read) with its gates closed, and a parent that times out,
fails or is cancelled stops its running sub-workflow runs, whose records say why. Real engine,
real step functions (approval_notify opens real gates), real PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest

from switchyard.engine.commands import StartExecution, StopExecution
from switchyard.engine.engine import Engine
from switchyard.local.report import find_run, list_runs, run_view
from switchyard.local.stack import local_engine
from switchyard.local.workflows import install
from tests.pg import fresh_database
from tests.unit.api.support import handler_environment

CHILD = """\
switchyard: 1
name: waits-for-lee
version: 1
steps:
  ask: {type: human_gate, message: "Go on?", assignee: lee}
"""
TIMES_OUT = """\
switchyard: 1
name: impatient
version: 1
budget: {max_duration: 1h}
steps:
  child: {type: sub_workflow, workflow: waits-for-lee@1}
  fetch:
    type: tool
    tool: http.request
    args: {url: "%s"}
    retry: {max_attempts: 1}
  ask: {type: human_gate, after: [fetch], message: "Also?", assignee: lee, timeout: 50m}
"""
CANCELLED = """\
switchyard: 1
name: cancelled-parent
version: 1
steps:
  child: {type: sub_workflow, workflow: waits-for-lee@1}
"""
FAILS = """\
switchyard: 1
name: failing-parent
version: 1
steps:
  child: {type: sub_workflow, workflow: waits-for-lee@1}
  broken:
    type: tool
    tool: http.request
    args: {url: "http://127.0.0.1:1/nothing-listens"}
    retry: {max_attempts: 1}
"""


@pytest.fixture(scope="module")
def conninfo() -> Iterator[str]:
    with fresh_database() as info:
        yield info


class FastForward:
    """The engine's clock: the real time plus however far a test has moved it on."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


@pytest.fixture
def clock() -> FastForward:
    return FastForward()


@pytest.fixture
def handlers(conninfo: str) -> Iterator[None]:
    """The step functions' environment on this module's database, their process-wide caches
    (pool, approval_notify's store) built anew for it and closed after: approval_notify records
    gates there, whatever module this process ran before."""
    with handler_environment(conninfo):
        yield


@pytest.fixture
def engine(conninfo: str, clock: FastForward, handlers: None) -> Iterator[Engine]:
    engine = local_engine(conninfo, clock=clock)
    engine.start()
    try:
        yield engine
    finally:
        engine.close()


def start(engine: Engine, tmp_path: Path, text: str, run_id: str) -> str:
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(text)
    with engine.read() as store:
        installed = install(store, engine.arns, tmp_path / "parent.yaml")
    started = engine.submit(StartExecution(installed.alias_arn, run_id, {}))
    return str(started["executionArn"])


def until(condition: Callable[[], Any], seconds: float = 20.0) -> Any:
    """Poll a condition on the database until it holds (no fixed sleeps)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("the condition did not hold in time")


def rows(conninfo: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(conninfo) as conn:
        return conn.execute(sql, params).fetchall()


def child_of(conninfo: str, parent_run: str) -> tuple[str, str, Any]:
    found = rows(
        conninfo,
        "SELECT c.run_id, c.status, c.error FROM workflow_runs c JOIN workflow_runs p"
        " ON c.parent_execution_id = p.execution_id WHERE p.run_id = %s",
        parent_run,
    )
    assert len(found) <= 1
    return found[0] if found else ("", "starting", None)


def open_gates(conninfo: str) -> set[str]:
    return {str(r[0]) for r in rows(conninfo, "SELECT run_id FROM gates WHERE status = 'open'")}


@pytest.fixture
def held_server() -> Iterator[tuple[str, threading.Event, threading.Event]]:
    """An HTTP server whose answers wait for the test: (url, asked, answer)."""
    asked, answer = threading.Event(), threading.Event()

    class Held(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.set()
            answer.wait(30)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Held)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", asked, answer
    finally:
        answer.set()
        server.shutdown()
        server.server_close()


def test_a_run_past_max_duration_is_timed_out_everywhere_with_its_gates_closed(
    engine: Engine,
    conninfo: str,
    tmp_path: Path,
    clock: FastForward,
    held_server: tuple[str, threading.Event, threading.Event],
) -> None:
    """The gate opens 30 minutes into the run (a call before it takes that long on the engine's
    clock), so its 50 minutes reach past the run's hour: the run's end, not the gate's timeout,
    closes it."""
    url, asked, answer = held_server
    execution = start(engine, tmp_path, TIMES_OUT % url, "times-out-1")
    assert asked.wait(30)
    clock.ahead = timedelta(minutes=30)
    answer.set()
    until(lambda: "times-out-1" in open_gates(conninfo))
    clock.ahead = timedelta(minutes=61)  # past the run's hour, short of the gate's 80 minutes
    assert engine.wait(execution, timeout=30) == "TIMED_OUT"
    with psycopg.connect(conninfo) as conn:
        execution_id, _ = find_run(conn, "times-out-1")
        view = run_view(conn, execution_id)  # `runs show` and GET /runs/{id}
        listed = list_runs(conn, status="timed_out")  # `runs list` and GET /runs
    assert view.status == "timed_out"
    assert view.data["error"]["type"] == "timeout" and view.data["ended_at"] is not None
    assert "times-out-1" in {run["run_id"] for run in listed}
    assert view.data["waiting_for"] == []
    assert view.data["steps"]["ask"]["status"] == "failed"
    assert "timed out" in view.data["steps"]["ask"]["error"]["message"]
    child_run, child_status, child_error = until(
        lambda: (
            (c := child_of(conninfo, "times-out-1"))[1] not in ("starting", "running", "waiting")
            and c
        )
    )
    assert child_status == "cancelled"
    assert child_error["message"] == (
        "The parent execution times-out-1 timed out, so this sub-workflow run was stopped"
    )
    until(lambda: not ({"times-out-1", child_run} & open_gates(conninfo)))


def test_a_cancelled_parent_stops_its_running_child(
    engine: Engine, conninfo: str, tmp_path: Path
) -> None:
    execution = start(engine, tmp_path, CANCELLED, "cancelled-1")
    until(lambda: child_of(conninfo, "cancelled-1")[1] == "waiting")
    engine.submit(StopExecution(execution, error="cancelled", cause="by a test"))
    assert engine.wait(execution, timeout=20) == "ABORTED"
    child_run, _, error = until(
        lambda: (c := child_of(conninfo, "cancelled-1"))[1] == "cancelled" and c
    )
    assert error["message"] == (
        "The parent execution cancelled-1 was stopped, so this sub-workflow run was stopped"
    )
    until(lambda: child_run not in open_gates(conninfo))


def test_a_failing_parent_stops_its_running_child(
    engine: Engine, conninfo: str, tmp_path: Path
) -> None:
    execution = start(engine, tmp_path, FAILS, "fails-1")
    assert engine.wait(execution, timeout=30) == "FAILED"
    with psycopg.connect(conninfo) as conn:
        assert run_view(conn, find_run(conn, "fails-1")[0]).status == "failed"
    child_run, status, error = until(
        lambda: (
            (c := child_of(conninfo, "fails-1"))[1] not in ("starting", "running", "waiting") and c
        )
    )
    assert status == "cancelled"
    assert error["message"] == (
        "The parent execution fails-1 failed, so this sub-workflow run was stopped"
    )
    until(lambda: child_run not in open_gates(conninfo))


def test_recovery_stops_a_child_whose_parent_ended_before_it_was_stopped(
    conninfo: str, tmp_path: Path, handlers: None
) -> None:
    first = local_engine(conninfo)
    first.start()
    try:
        execution = start(
            first, tmp_path, CANCELLED.replace("cancelled-parent", "orphaning"), "o-1"
        )
        until(lambda: child_of(conninfo, "o-1")[1] == "waiting")
    finally:
        first.close()
    # What a crash leaves when the parent's end was committed and the engine died before its
    # follow-up stopped the child: the parent is final, the child still RUNNING.
    with psycopg.connect(conninfo) as conn:
        conn.execute("UPDATE sfn_executions SET status = 'ABORTED' WHERE arn = %s", (execution,))
    second = local_engine(conninfo)
    second.start()
    try:
        child_run, _, error = until(
            lambda: (c := child_of(conninfo, "o-1"))[1] == "cancelled" and c
        )
        assert error["message"] == (
            "The parent execution o-1 was stopped, so this sub-workflow run was stopped"
        )
        until(lambda: child_run not in open_gates(conninfo))
    finally:
        second.close()
