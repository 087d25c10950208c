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

The statements read the engine's tables (history, tasks in flight, timers, frames) and the
gates; they only read them. `stuck_runs` is the one entry point: `switchyard runs list
--stuck`, `GET /runs?stuck=true` and the dashboard call it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row

from switchyard.constants import DEFAULT_STUCK_AFTER_SECONDS, STUCK_AFTER_ENV
from switchyard.local.report import listed_run
from switchyard.model.durations import parse_duration

WaitKind = Literal["task", "callback", "timer", "sub_workflow", "none"]

OPEN_STATUSES = ("running", "waiting", "paused")
MAX_STUCK_AFTER_SECONDS = 999 * 86400

IDLE_RUNS_SQL = """
WITH RECURSIVE chosen (execution_id, selected) AS (
    SELECT r.execution_id, TRUE FROM workflow_runs r
     WHERE r.status IN ('running', 'waiting', 'paused')
       AND (%(ids)s::bigint[] IS NULL OR r.execution_id = ANY(%(ids)s::bigint[]))
       AND (%(status)s::text IS NULL OR r.status = %(status)s::text)
       AND (%(workflow)s::text IS NULL OR r.workflow = %(workflow)s::text)
    UNION ALL
    SELECT c.execution_id, FALSE FROM workflow_runs c
      JOIN chosen p ON c.parent_execution_id = p.execution_id
     WHERE c.status IN ('running', 'waiting', 'paused')
), runs AS (
    SELECT execution_id, bool_or(selected) AS selected FROM chosen GROUP BY execution_id
)
SELECT r.*, e.arn, runs.selected, COALESCE(last.at, r.started_at) AS last_transition_at
  FROM runs
  JOIN workflow_runs r ON r.execution_id = runs.execution_id
  JOIN sfn_executions e ON e.id = r.execution_id
  LEFT JOIN LATERAL (
       SELECT h.at FROM sfn_history h
        WHERE h.execution_id = r.execution_id
        ORDER BY h.event_id DESC LIMIT 1) last ON TRUE
 WHERE COALESCE(last.at, r.started_at) < %(idle_since)s
"""
"""The open runs asked for and their open sub-workflow runs (whether a parent is stuck depends on
its children), when their last transition is older than the threshold: the candidates (the
open runs' partial index, then one history row per run by its primary key)."""

WAITS_SQL = """
SELECT t.execution_id, t.kind, f.data->>'state' AS state,
       t.parameters->'Payload'->>'step_id' AS step,
       (SELECT min(m.fire_at) FROM sfn_timers m
         WHERE m.execution_id = t.execution_id AND m.frame_id = t.frame_id) AS due_at,
       t.token IS NOT NULL AND EXISTS (
           SELECT 1 FROM gates g WHERE g.token = t.token AND g.status = 'open') AS gate_open,
       child.execution_id AS child_execution_id, child.run_id AS child_run_id,
       child.step AS child_step
  FROM sfn_tasks t
  LEFT JOIN sfn_frames f ON f.execution_id = t.execution_id AND f.frame_id = t.frame_id
  LEFT JOIN LATERAL (
       SELECT c.execution_id, c.run_id, ce.parent->>'step' AS step FROM workflow_runs c
         JOIN sfn_executions ce ON ce.id = c.execution_id
        WHERE t.kind = 'child' AND c.parent_execution_id = t.execution_id
          AND ce.status = 'RUNNING' AND (ce.parent->>'frame')::int = t.frame_id
        ORDER BY c.execution_id DESC LIMIT 1) child ON TRUE
 WHERE t.execution_id = ANY(%(ids)s::bigint[])
UNION ALL
SELECT m.execution_id, 'timer', f.data->>'state', NULL, m.fire_at, FALSE, NULL, NULL, NULL
  FROM sfn_timers m
  LEFT JOIN sfn_frames f ON f.execution_id = m.execution_id AND f.frame_id = m.frame_id
 WHERE m.execution_id = ANY(%(ids)s::bigint[])
   AND NOT EXISTS (SELECT 1 FROM sfn_tasks t
                    WHERE t.execution_id = m.execution_id AND t.frame_id = m.frame_id)
"""
"""What each candidate waits on: its tasks in flight (with the earliest timer of the task's
frame, its open gate, its running child run) and its timers that belong to no task (Wait
states, retry backoffs)."""


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
    after = timedelta(seconds=after_seconds)
    params = {
        "idle_since": now - after,
        "ids": list(execution_ids) if execution_ids is not None else None,
        "status": status,
        "workflow": workflow,
    }
    cursor = conn.cursor(row_factory=dict_row)
    idle = {r["execution_id"]: r for r in cursor.execute(IDLE_RUNS_SQL, params).fetchall()}
    if not idle:
        return []
    waits: dict[int, list[dict[str, Any]]] = {execution_id: [] for execution_id in idle}
    for row in cursor.execute(WAITS_SQL, {"ids": list(idle)}).fetchall():
        waits[row["execution_id"]].append(row)
    found = _stuck_waits(idle, waits, now, after)
    runs = [
        StuckRun(
            execution_id,
            listed_run(idle[execution_id]),
            idle[execution_id]["last_transition_at"],
            (now - idle[execution_id]["last_transition_at"]).total_seconds(),
            tuple(waiting),
        )
        for execution_id, waiting in found.items()
        if idle[execution_id]["selected"]
    ]
    runs.sort(
        key=lambda run: (idle[run.execution_id]["started_at"], run.execution_id), reverse=True
    )
    return runs[:limit] if limit is not None else runs


def _database_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def _stuck_waits(
    idle: Mapping[int, Mapping[str, Any]],
    waits: Mapping[int, Iterable[Mapping[str, Any]]],
    now: datetime,
    after: timedelta,
) -> dict[int, list[Wait]]:
    """Each idle run's waits without a known end; a run with none is not stuck. A sub-workflow
    step waits without end when its child run is stuck, which is known once the child's own
    waits are: the loop settles the runs deepest first."""
    found: dict[int, list[Wait]] = {}
    pending: dict[int, list[Mapping[str, Any]]] = {}
    for execution_id, rows in waits.items():
        own: list[Wait] = []
        children: list[Mapping[str, Any]] = []
        rows = list(rows)
        for row in rows:
            if row["child_execution_id"] is not None:
                children.append(row)
                continue
            wait = _endless(row, now, after)
            if wait is not None:
                own.append(wait)
        if not rows:
            own.append(Wait("none"))
        if own:
            found[execution_id] = own
        if children:
            pending[execution_id] = children
    changed = True
    while changed:
        changed = False
        for execution_id, children in pending.items():
            for row in children:
                child = row["child_execution_id"]
                if child not in found:
                    continue
                wait = Wait(
                    "sub_workflow", row["state"], row["child_step"], run_id=row["child_run_id"]
                )
                listed = found.setdefault(execution_id, [])
                if wait not in listed:
                    listed.append(wait)
                    changed = True
    return found


def _endless(row: Mapping[str, Any], now: datetime, after: timedelta) -> Wait | None:
    """The wait of an idle run, when it has no known end: no open gate holds it, and it has no
    timer, or its timer fell due longer than the threshold ago."""
    if row["gate_open"]:
        return None
    due: datetime | None = row["due_at"]
    if due is not None and due + after > now:
        return None  # a timer still ahead (or just due: the engine fires it)
    kind: WaitKind = row["kind"] if row["kind"] in ("callback", "timer") else "task"
    return Wait(kind, row["state"], row["step"], due_at=due)
