"""Segments of a run that continues as new (a loop's `continue_as_new`): which logical run an
execution belongs to, read from its input, and the logical run put back together from its
segments' records for `runs show`, `GET /runs/{id}` and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.rows import dict_row

from switchyard.contract import continuation_of

SEGMENTS_SQL = """
SELECT w.execution_id, w.run_id, w.segment, w.continued_from, w.status, w.cost_usd,
       w.input_tokens, w.output_tokens, w.started_at, w.ended_at, e.arn
  FROM workflow_runs w JOIN sfn_executions e ON e.id = w.execution_id
 WHERE w.run_id = %(run)s OR w.logical_run_id = %(run)s
 ORDER BY w.segment, w.started_at
"""
NEWEST_SEGMENT_SQL = """
SELECT w.execution_id, e.arn
  FROM workflow_runs w JOIN sfn_executions e ON e.id = w.execution_id
 WHERE w.logical_run_id = %s
 ORDER BY w.segment DESC LIMIT 1
"""
LOGICAL_RUN_SQL = """
SELECT COALESCE(logical_run_id, run_id) FROM workflow_runs WHERE run_id = %s
 ORDER BY started_at DESC LIMIT 1
"""


@dataclass(frozen=True)
class SegmentOf:
    """What an execution's input says about its place in a logical run."""

    number: int = 1
    logical_run_id: str | None = None
    """The first segment's run id; None for a first segment (it is its own)."""
    continued_from: str | None = None


def segment_of(data: Any) -> SegmentOf:
    carried = continuation_of(data)
    if carried is None:
        return SegmentOf()
    run = carried.get("run") if isinstance(carried.get("run"), dict) else {}
    segment = carried.get("segment")
    return SegmentOf(
        number=segment if isinstance(segment, int) else 1,
        logical_run_id=str(run.get("id")) if run and run.get("id") else None,
        continued_from=str(carried["continued_from"]) if carried.get("continued_from") else None,
    )


@dataclass(frozen=True)
class Segment:
    """One execution of a logical run."""

    execution_id: int
    run_id: str
    number: int
    continued_from: str | None
    status: str
    cost_usd: Decimal
    input_tokens: int
    output_tokens: int
    started_at: datetime
    ended_at: datetime | None
    execution_arn: str

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "segment": self.number,
            "continued_from": self.continued_from,
            "status": self.status,
            "cost_usd": float(self.cost_usd),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "execution_arn": self.execution_arn,
        }


@dataclass(frozen=True)
class LogicalRun:
    """A run as people see it: its segments in order, its status the last one's, its spend
    theirs summed."""

    run_id: str
    segments: tuple[Segment, ...]

    @property
    def last(self) -> Segment:
        return self.segments[-1]

    @property
    def status(self) -> str:
        return self.last.status

    @property
    def cost_usd(self) -> Decimal:
        return sum((s.cost_usd for s in self.segments), Decimal(0))

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens for s in self.segments)

    @property
    def output_tokens(self) -> int:
        return sum(s.output_tokens for s in self.segments)

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "segment_count": len(self.segments),
            "cost_usd": float(self.cost_usd),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "segments": [s.as_json() for s in self.segments],
        }


def logical_run_id(conn: psycopg.Connection[Any], run_id: str) -> str:
    """The logical run a run id belongs to (itself unless it is a continued segment)."""
    row = conn.execute(LOGICAL_RUN_SQL, (run_id,)).fetchone()
    return str(row[0]) if row else run_id


def segment_fields(row: Any) -> dict[str, Any]:
    """What a list row of a run that continued as new adds (`segment`, `logical_run_id`), so
    that its segments read as one run; nothing for any other run."""
    segment = int(row.get("segment") or 1)
    if segment == 1 and row.get("status") != "continued":
        return {}
    return {"segment": segment, "logical_run_id": row.get("logical_run_id") or row["run_id"]}


def newest_segment(conn: psycopg.Connection[Any], run_id: str) -> tuple[int, str] | None:
    """(execution id, ARN) of the newest segment of the logical run `run_id`, if it continued
    as new: where it runs now, what `cancel`, `resume` and `approve` act on."""
    row = conn.execute(NEWEST_SEGMENT_SQL, (run_id,)).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def logical_run(conn: psycopg.Connection[Any], run_id: str) -> LogicalRun | None:
    """The logical run `run_id` names or belongs to, with every segment; None if unknown."""
    first = logical_run_id(conn, run_id)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(SEGMENTS_SQL, {"run": first}).fetchall()
    if not rows:
        return None
    segments = tuple(
        Segment(
            execution_id=int(r["execution_id"]),
            run_id=str(r["run_id"]),
            number=int(r["segment"]),
            continued_from=r["continued_from"],
            status=str(r["status"]),
            cost_usd=Decimal(r["cost_usd"]),
            input_tokens=int(r["input_tokens"]),
            output_tokens=int(r["output_tokens"]),
            started_at=r["started_at"],
            ended_at=r["ended_at"],
            execution_arn=str(r["arn"]),
        )
        for r in rows
    )
    return LogicalRun(first, segments)
