"""Stuck runs: open runs that made no transition for a while and wait on nothing with an end.

A run is stuck when it has not ended, its last history event is older than the threshold
(`SWITCHYARD_STUCK_AFTER`, default 5 minutes), and something it waits on has no known end:

- a step's function that has not returned and has no timeout still ahead (`task`);
- a task token that no open gate holds and no timeout bounds (`callback`);
- a timer (a Wait state, a retry's backoff, a task's timeout) that fell due more than the
  threshold ago and did not fire: no engine is running the run (`timer`);
- a sub-workflow run that is itself stuck (`sub_workflow`): parent and child are both listed;
- nothing at all while the run's record still says it runs (`none`).

Waiting on a person (an open approval, human, pause or budget gate) or on a timer still ahead
is not being stuck, however long it lasts. docs/runbooks.md says what to do about each kind.

The statement (`STUCK_WAITS_SQL`, in the run records' read model, `records/reports.py`) reads
the engine's tables (history, tasks in flight, timers, frames) and the gates; it only reads
them. `stuck_runs` is the one entry point: `switchyard runs list --stuck`, `GET /runs?stuck=true`
and the dashboard call it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg

from switchyard.constants import DEFAULT_STUCK_AFTER_SECONDS, STUCK_AFTER_ENV
from switchyard.local.report import listed_run
from switchyard.model.durations import parse_duration
from switchyard.records.reports import RunReports

WaitKind = Literal["task", "callback", "timer", "sub_workflow", "none"]

OPEN_STATUSES = ("running", "waiting", "paused")
MAX_STUCK_AFTER_SECONDS = 999 * 86400


class StuckAfterError(ValueError):
    """A stuck threshold that is not a positive duration."""


@dataclass(frozen=True, slots=True)
class Wait:
    """One thing a stuck run waits on."""

    kind: WaitKind
    state: str | None = None
    """The state machine's state (as the execution history names it)."""
    step: str | None = None
    """The workflow's step, when the task's payload names it."""
    due_at: datetime | None = None
    """When a timer (a wait, a backoff, a task's timeout) fell due without firing."""
    run_id: str | None = None
    """A stuck sub-workflow's run."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "state": self.state,
            "step": self.step,
            "due_at": self.due_at.isoformat() if self.due_at else None,
            "run_id": self.run_id,
        }


@dataclass(frozen=True, slots=True)
class StuckRun:
    execution_id: int
    run: Mapping[str, Any]
    """The run as `runs list` shows it."""
    last_transition_at: datetime
    idle_seconds: float
    waiting_on: tuple[Wait, ...]

    def to_json(self) -> dict[str, Any]:
        """The `runs list` entry with a `stuck` member."""
        return {
            **self.run,
            "stuck": {
                "last_transition_at": self.last_transition_at.isoformat(),
                "idle_seconds": round(self.idle_seconds, 1),
                "waiting_on": [wait.to_json() for wait in self.waiting_on],
            },
        }


def stuck_after(value: str | int | None = None) -> int:
    """The threshold in seconds: `value` (seconds, or `90s`, `10m`, `1h`), else
    SWITCHYARD_STUCK_AFTER, else 5 minutes."""
    if value is None:
        value = os.environ.get(STUCK_AFTER_ENV) or None
        if value is None:
            return DEFAULT_STUCK_AFTER_SECONDS
        where = f"{STUCK_AFTER_ENV}={value!r}"
    else:
        where = repr(value)
    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = 0
    if not 1 <= seconds <= MAX_STUCK_AFTER_SECONDS:
        raise StuckAfterError(
            f"the stuck threshold {where} is not a duration of at least one second (and at"
            " most 999 days): write seconds (300) or 90s, 10m, 1h"
        )
    return seconds


def stuck_runs(
    conn: psycopg.Connection[Any],
    *,
    after_seconds: int,
    status: str | None = None,
    workflow: str | None = None,
    execution_ids: Sequence[int] | None = None,
    limit: int | None = None,
    now: datetime | None = None,
) -> list[StuckRun]:
    """The stuck runs (of one status, one workflow, or among `execution_ids` when given), the
    latest started first. `now` defaults to the database's clock, which the engine's history
    and timers are written against when it runs on the same machine."""
    if now is None:
        now = _database_now(conn)
    rows = RunReports(conn).stuck_waits(
        idle_since=now - timedelta(seconds=after_seconds),
        execution_ids=execution_ids,
        status=status,
        workflow=workflow,
    )
    runs: dict[int, dict[str, Any]] = {row["execution_id"]: row for row in rows}
    found = _stuck_waits(rows)
    stuck = [
        StuckRun(
            execution_id,
            listed_run(runs[execution_id]),
            runs[execution_id]["last_transition_at"],
            (now - runs[execution_id]["last_transition_at"]).total_seconds(),
            tuple(waiting),
        )
        for execution_id, waiting in found.items()
        if runs[execution_id]["selected"]
    ]
    stuck.sort(
        key=lambda run: (runs[run.execution_id]["started_at"], run.execution_id), reverse=True
    )
    return stuck[:limit] if limit is not None else stuck


def _database_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def _stuck_waits(rows: Iterable[Mapping[str, Any]]) -> dict[int, list[Wait]]:
    """Each stuck run's waits. A sub-workflow step waits without end when its child run is
    stuck, which is known once the child's own waits are: the loop settles the runs deepest
    first."""
    found: dict[int, list[Wait]] = {}
    children: list[Mapping[str, Any]] = []
    for row in rows:
        if row["child_execution_id"] is not None:
            children.append(row)
            continue
        kind: WaitKind = row["kind"] if row["kind"] in ("callback", "timer", "none") else "task"
        wait = Wait(kind, row["state"], row["step"], due_at=row["due_at"])
        found.setdefault(row["execution_id"], []).append(wait)
    changed = True
    while changed:
        changed = False
        for row in children:
            if row["child_execution_id"] not in found:
                continue
            wait = Wait("sub_workflow", row["state"], row["child_step"], run_id=row["child_run_id"])
            listed = found.setdefault(row["execution_id"], [])
            if wait not in listed:
                listed.append(wait)
                changed = True
    return found
