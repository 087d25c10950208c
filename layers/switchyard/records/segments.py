"""Segments of a run that continues as new (a loop's `continue_as_new`): which logical run an
execution belongs to, read from its input, and the logical run put back together from its
segments' records for `runs show`, `GET /runs/{id}` and the dashboard (read through `RunStore`)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import psycopg

from switchyard.contract import continuation_of
from switchyard.records.store import RunStore, Segment

__all__ = [
    "LogicalRun",
    "Segment",
    "SegmentOf",
    "logical_run",
    "logical_run_id",
    "newest_segment",
    "segment_fields",
    "segment_of",
]


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
    return RunStore(conn).logical_run_id(run_id) or run_id


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
    newest = RunStore(conn).newest_segment(run_id)
    return (newest.execution_id, newest.arn) if newest else None


def logical_run(conn: psycopg.Connection[Any], run_id: str) -> LogicalRun | None:
    """The logical run `run_id` names or belongs to, with every segment; None if unknown."""
    first = logical_run_id(conn, run_id)
    segments = tuple(RunStore(conn).segments(first))
    if not segments:
        return None
    return LogicalRun(first, segments)
