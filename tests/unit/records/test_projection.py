"""What the run records take from a write at `$.steps`: a route Pass records its router's
choice and, as skipped, the steps that choice leaves with no live dependency, all at once; a
Parallel hands back records its branches already wrote, which stay as they were."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from switchyard.contract import CONTINUE_KEY
from switchyard.records import RunEnd, RunRecords, RunRef, RunStart, TaskCall
from tests.pg import pg_conninfo  # noqa: F401  (a pytest fixture)

ARN = "arn:aws:states:us-east-1:1:execution:m:r"
EARLY = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
LATE = datetime(2026, 12, 1, 10, 5, tzinfo=UTC)
SKIPPED = {"status": "skipped", "output": None}


@dataclass(frozen=True)
class Run:
    conn: psycopg.Connection[Any]
    ref: RunRef

    def rows(self) -> dict[str, tuple[Any, ...]]:
        rows = self.conn.execute(
            "SELECT step_id, status, output, error, ended_at FROM task_runs"
            " WHERE execution_id = %s",
            (self.ref.execution_id,),
        ).fetchall()
        return {row[0]: tuple(row[1:]) for row in rows}


@pytest.fixture
def run(pg_conninfo: str) -> Iterator[Run]:  # noqa: F811
    with psycopg.connect(pg_conninfo) as connection:
        yield Run(connection, _started(connection, "r", {}))
        connection.rollback()


def _started(conn: psycopg.Connection[Any], name: str, data: Any) -> RunRef:
    conn.execute("INSERT INTO sfn_definitions VALUES ('h', '{}') ON CONFLICT DO NOTHING")
    (execution_id,) = conn.execute(
        "INSERT INTO sfn_executions (arn, machine_arn, definition_hash, name, status,"
        " started_at) VALUES (%s, 'm', 'h', %s, 'RUNNING', now()) RETURNING id",
        (f"{ARN}-{name}", name),
    ).fetchone() or (0,)
    run = RunRef(execution_id, f"{ARN}-{name}")
    RunRecords(conn).started(run, RunStart(name, "content-moderation", 1, data, started_at=EARLY))
    return run


def test_a_route_pass_records_its_router_and_every_step_it_skips(
    run: Run,
) -> None:
    records = RunRecords(run.conn)
    score = {"status": "completed", "output": {"toxicity": 0.9}, "attempts": 1}
    records.written(run.ref, "$.steps.score", score, at=EARLY)
    route = {"status": "completed", "output": {"route": "block", "reason": "toxic"}}
    steps = {"score": score, "triage": route, "borderline": SKIPPED, "publish": SKIPPED}
    records.written(run.ref, "$.steps", steps, at=LATE)
    rows = run.rows()
    assert rows["triage"][:2] == ("completed", {"route": "block", "reason": "toxic"})
    assert rows["borderline"] == ("skipped", None, None, LATE)
    assert rows["publish"] == ("skipped", None, None, LATE)
    assert rows["score"][3] == EARLY  # already recorded as it is: left alone


def test_records_a_parallel_hands_back_are_left_as_its_branches_wrote_them(
    run: Run,
) -> None:
    records = RunRecords(run.conn)
    failed = {"status": "failed", "output": None, "error": {"type": "States.Timeout"}}
    records.written(run.ref, "$.steps.a", failed, at=EARLY)
    records.written(run.ref, "$.steps.b", SKIPPED, at=EARLY)
    running = {"status": "running", "retries": 0}
    records.written(run.ref, "$.steps", {"a": failed, "b": SKIPPED, "c": running}, at=LATE)
    rows = run.rows()
    assert rows["a"] == ("failed", None, {"type": "timeout"}, EARLY)
    assert rows["b"] == ("skipped", None, None, EARLY)
    assert "c" not in rows  # a record still running is not one yet


def test_a_record_that_changed_is_recorded_again(run: Run) -> None:
    """The same run taking another route (a run reset to before its router) records it."""
    records = RunRecords(run.conn)
    first = {"status": "completed", "output": {"route": "a"}}
    records.written(run.ref, "$.steps", {"r": first}, at=EARLY)
    records.written(run.ref, "$.steps", {"r": {**first, "output": {"route": "b"}}}, at=LATE)
    assert run.rows()["r"] == ("completed", {"route": "b"}, None, LATE)


def test_a_continued_segment_leaves_its_earlier_segments_records_where_they_are(run: Run) -> None:
    """A segment of a run that continued as new carries the records of the segments before
    it in its state: a write of the whole `$.steps` there records only what is new."""
    records = RunRecords(run.conn)
    score = {"status": "completed", "output": {"toxicity": 0.1}}
    records.written(run.ref, "$.steps.score", score, at=EARLY)
    carried = {CONTINUE_KEY: {"run": {"id": "r"}, "segment": 2, "continued_from": "r"}}
    second = _started(run.conn, "r-2", carried)
    records.written(second, "$.steps", {"score": score, "x": SKIPPED}, at=LATE)
    rows = run.conn.execute(
        "SELECT step_id FROM task_runs WHERE execution_id = %s", (second.execution_id,)
    ).fetchall()
    assert rows == [("x",)]


def test_a_run_that_failed_inside_a_step_names_it_and_fails_it_with_its_error(run: Run) -> None:
    """A budget refusal with `on_exceeded: fail` ends the run before the step's record is
    written: the run's error names the step it was in, and that step (not the others cut
    short) is closed with the run's error."""
    records = RunRecords(run.conn)
    for step_id, at in (("draft", EARLY), ("research", LATE)):
        call = TaskCall("lambda", "agent_step", {"Payload": {"step_id": step_id}})
        records.scheduled(run.ref, call, at=at)
    end = RunEnd("FAILED", error="budget", cause="step research cannot pay for a useful answer")
    records.finished(run.ref, end, at=LATE)
    rows = run.rows()
    error = run.conn.execute(
        "SELECT error FROM workflow_runs WHERE execution_id = %s", (run.ref.execution_id,)
    ).fetchone()
    assert error is not None and error[0]["step"] == "research"
    assert rows["research"][:3] == ("failed", None, {"type": "budget", "message": end.cause})
    assert rows["draft"][2]["message"] == "the run failed before this step finished"
