"""The run records' tables, `workflow_runs` and `task_runs` (migration 0002): the one module
with SQL on them. `RunRecords` (`projection.py`) decides what to write from an execution's facts
and writes through `RunStore`; `switchyard runs`, `run --json`, the REST API and the operators'
routes read through it.

(The reports that join these tables with the engine's and the gates' — the dashboard's, stuck
runs — are the read model's, `reports.py`: read-only statements of its own.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, TypeVar

import psycopg
from psycopg.rows import class_row

from switchyard.contract import PARENT_LINK_KEY

Row = TypeVar("Row")

# --- writes (the projection's) ---------------------------------------------------------------

START_SQL = """
INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version, status, input,
                           started_at, parent_execution_id, parent_step, logical_run_id,
                           segment, continued_from)
VALUES (%s, %s, %s, %s, 'running', %s::jsonb, %s, %s, %s, %s, %s, %s)
ON CONFLICT (execution_id) DO NOTHING
"""
RUN_STATUS_SQL = """
UPDATE workflow_runs SET status = %s, updated_at = now(), version = version + 1
 WHERE execution_id = %s
"""
RUN_RESUMED_SQL = """
UPDATE workflow_runs SET status = 'running', updated_at = now(), version = version + 1
 WHERE execution_id = %s AND status IN ('waiting', 'paused')
"""
REDRIVEN_SQL = """
UPDATE workflow_runs SET status = 'running', ended_at = NULL, error = NULL, updated_at = now(),
       version = version + 1
 WHERE execution_id = %s
"""
SCHEDULED_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, attempts, started_at, input)
VALUES (%(id)s, %(step)s, %(item)s, %(status)s, %(attempts)s, COALESCE(%(at)s, now()),
        %(input)s::jsonb)
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET
       status = CASE WHEN %(after_failure)s AND task_runs.status = 'failed' THEN 'failed'
                     ELSE EXCLUDED.status END,
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), updated_at = now(),
       version = task_runs.version + 1
"""
SPEND_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, attempts, cost_usd, input_tokens,
                       output_tokens, cache_read_tokens, model, provider, started_at)
VALUES (%s, %s, %s, 'running', %s, %s, %s, %s, %s, %s, %s, COALESCE(%s, now()))
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts),
       cost_usd = task_runs.cost_usd + EXCLUDED.cost_usd,
       input_tokens = task_runs.input_tokens + EXCLUDED.input_tokens,
       output_tokens = task_runs.output_tokens + EXCLUDED.output_tokens,
       cache_read_tokens = task_runs.cache_read_tokens + EXCLUDED.cache_read_tokens,
       model = COALESCE(EXCLUDED.model, task_runs.model),
       provider = COALESCE(EXCLUDED.provider, task_runs.provider),
       updated_at = now(), version = task_runs.version + 1
"""
ITEM_DONE_SQL = """
UPDATE task_runs SET status = 'completed', output = %s::jsonb, ended_at = COALESCE(%s, now())
 WHERE execution_id = %s AND step_id = %s AND item = %s
"""
RUN_SPEND_SQL = """
UPDATE workflow_runs SET cost_usd = cost_usd + %s, input_tokens = input_tokens + %s,
       output_tokens = output_tokens + %s, updated_at = now(), version = version + 1
 WHERE execution_id = %s
"""
ANCESTORS_SPEND_SQL = """
WITH RECURSIVE up(execution_id, step_id) AS (
    SELECT parent_execution_id, parent_step FROM workflow_runs
     WHERE execution_id = %(id)s AND parent_execution_id IS NOT NULL
    UNION ALL
    SELECT w.parent_execution_id, w.parent_step FROM workflow_runs w
      JOIN up ON w.execution_id = up.execution_id
     WHERE w.parent_execution_id IS NOT NULL
), runs AS (
    UPDATE workflow_runs r SET cost_usd = r.cost_usd + %(cost)s,
           input_tokens = r.input_tokens + %(in)s, output_tokens = r.output_tokens + %(out)s,
           updated_at = now(), version = r.version + 1
      FROM up WHERE r.execution_id = up.execution_id
    RETURNING r.execution_id
)
INSERT INTO task_runs (execution_id, step_id, item, status, attempts, cost_usd, input_tokens,
                       output_tokens, started_at)
SELECT up.execution_id, up.step_id, '', 'running', 1, %(cost)s, %(in)s, %(out)s,
       COALESCE(%(at)s, now())
  FROM up JOIN runs ON runs.execution_id = up.execution_id
 WHERE up.step_id IS NOT NULL
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET
       cost_usd = task_runs.cost_usd + EXCLUDED.cost_usd,
       input_tokens = task_runs.input_tokens + EXCLUDED.input_tokens,
       output_tokens = task_runs.output_tokens + EXCLUDED.output_tokens,
       attempts = GREATEST(task_runs.attempts, 1),
       started_at = COALESCE(task_runs.started_at, EXCLUDED.started_at),
       updated_at = now(), version = task_runs.version + 1
"""
RECORD_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, output, error, attempts, ended_at)
VALUES (%s, %s, '', %s, %s::jsonb, %s::jsonb, %s, COALESCE(%s, now()))
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET status = EXCLUDED.status,
       output = EXCLUDED.output, error = EXCLUDED.error,
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), ended_at = EXCLUDED.ended_at,
       updated_at = now(), version = task_runs.version + 1
"""
FINISHED_SQL = """
UPDATE workflow_runs SET status = %(status)s, output = %(output)s::jsonb, ended_at = %(ended)s,
       error = CASE WHEN %(error)s::jsonb IS NULL THEN NULL ELSE %(error)s::jsonb
           || jsonb_build_object('step', (SELECT step_id FROM task_runs
                                           WHERE execution_id = %(id)s
                                             AND (status = 'failed' OR %(status)s = 'failed'
                                                  AND status IN ('running', 'waiting'))
                                           ORDER BY status = 'failed' DESC,
                                                    ended_at DESC NULLS LAST,
                                                    started_at DESC NULLS LAST, updated_at DESC
                                           LIMIT 1)) END,
       updated_at = now(), version = version + 1
 WHERE execution_id = %(id)s
"""
RECORDS_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, output, error, attempts, ended_at)
SELECT %(id)s, r.step_id, '', r.status, r.output, r.error, COALESCE(r.attempts, 0),
       COALESCE(%(at)s, now())
  FROM jsonb_to_recordset(%(records)s::jsonb)
       AS r(step_id text, status text, output jsonb, error jsonb, attempts int)
 WHERE NOT EXISTS (  -- a continued segment carries its run's earlier segments' records
       SELECT 1 FROM workflow_runs me
         JOIN workflow_runs w
           ON w.run_id = me.logical_run_id OR w.logical_run_id = me.logical_run_id
         JOIN task_runs t ON t.execution_id = w.execution_id
        WHERE me.execution_id = %(id)s AND w.execution_id <> %(id)s
          AND t.step_id = r.step_id AND t.item = ''
          AND (t.status, t.output, t.error) IS NOT DISTINCT FROM (r.status, r.output, r.error))
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET status = EXCLUDED.status,
       output = EXCLUDED.output, error = EXCLUDED.error,
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), ended_at = EXCLUDED.ended_at,
       updated_at = now(), version = task_runs.version + 1
 WHERE (task_runs.status, task_runs.output, task_runs.error)
       IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.output, EXCLUDED.error)
"""
"""The records of a write at `$.steps`, in one statement: those the rows do not show yet (this
execution's, or an earlier segment's of a run that continued as new)."""
CONTINUED_STEPS_SQL = """
UPDATE task_runs SET status = 'continued', ended_at = COALESCE(%s, now()),
       updated_at = now(), version = version + 1
 WHERE execution_id = %s AND status IN ('running', 'waiting')
"""
REPLAYED_SQL = """
UPDATE task_runs SET replayed_from = %s, updated_at = now(), version = version + 1
 WHERE execution_id = %s AND step_id = %s AND item = %s
"""
UNFINISHED_STEPS_SQL = """
UPDATE task_runs t SET status = 'failed',
       error = CASE WHEN t.step_id = r.error ->> 'step' THEN r.error - 'step' ELSE %s::jsonb END,
       ended_at = COALESCE(%s, now()), updated_at = now(), version = t.version + 1
  FROM workflow_runs r
 WHERE t.execution_id = %s AND r.execution_id = t.execution_id
   AND t.status IN ('running', 'waiting')
"""
"""A run that ended badly closes the steps it leaves running or waiting: the one it failed at
(its error names it: a step whose failure ended the run before its record was written, as a
budget refusal with `on_exceeded: fail`) with the run's error, the others as cut short."""

# --- reads -----------------------------------------------------------------------------------

RUN_COLUMNS = """
r.execution_id, e.arn, r.run_id, r.workflow, r.workflow_version, r.status, r.input, r.output,
r.error, r.cost_usd, r.input_tokens, r.output_tokens, r.parent_execution_id, r.parent_step,
r.started_at, r.ended_at, r.segment, r.logical_run_id, r.continued_from
"""
FIND_RUN_SQL = """
SELECT e.id AS execution_id, e.arn
  FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id
 WHERE r.run_id = %s
UNION
SELECT e.id, e.arn
  FROM sfn_executions e JOIN workflow_runs r ON r.execution_id = e.id
 WHERE e.arn = %s
 ORDER BY 1 DESC
"""
"""A run by its id or its ARN: two lookups, each on its own index (an `OR` across the join read
every run: 408 ms at 100,000 runs)."""
RUN_SQL = f"""
SELECT {RUN_COLUMNS}
  FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id
 WHERE r.execution_id = %s
"""
RUNS_WITH_ID_SQL = f"""
SELECT {RUN_COLUMNS}
  FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id
 WHERE r.run_id = %s
 ORDER BY r.execution_id DESC
"""
RUNS_SQL = f"""
SELECT {RUN_COLUMNS}
  FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id
 WHERE (%(status)s::text IS NULL OR r.status = %(status)s::text)
   AND (%(workflow)s::text IS NULL OR r.workflow = %(workflow)s::text)
 ORDER BY r.started_at DESC
 LIMIT %(limit)s
"""
STATUS_SQL = "SELECT status FROM workflow_runs WHERE execution_id = %s"
TASK_RUNS_SQL = """
SELECT t.execution_id, t.step_id, t.item, t.status, t.attempts, t.input, t.output, t.error,
       t.cost_usd, t.input_tokens, t.output_tokens, t.cache_read_tokens, t.model, t.provider,
       t.started_at, t.ended_at, t.replayed_from
  FROM task_runs t JOIN unnest(%s::bigint[]) WITH ORDINALITY AS x(id, n) ON t.execution_id = x.id
 ORDER BY x.n, t.started_at NULLS LAST, t.step_id, t.item
"""
"""The step records of these executions (a run's segments, in order)."""
SEGMENTS_SQL = """
SELECT w.execution_id, w.run_id, w.segment AS number, w.continued_from, w.status, w.cost_usd,
       w.input_tokens, w.output_tokens, w.started_at, w.ended_at, e.arn AS execution_arn
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
EXECUTIONS_BY_RUN_ID_SQL = "SELECT execution_id FROM workflow_runs WHERE run_id = %s"
EXECUTIONS_BY_ARN_SQL = """
SELECT id FROM sfn_executions e
 WHERE arn = %s AND EXISTS (SELECT 1 FROM workflow_runs r WHERE r.execution_id = e.id)
"""
"""The executions with run records that a run id or an ARN names: each lookup on its own index
(an OR across the join would read every run)."""
RUN_VALUE_SQL = {
    "input": "SELECT left(input::text, %s), octet_length(input::text) FROM workflow_runs"
    " WHERE execution_id = %s",
    "output": "SELECT left(output::text, %s), octet_length(output::text) FROM workflow_runs"
    " WHERE execution_id = %s",
}
STEP_VALUE_SQL = {
    "input": "SELECT left(input::text, %s), octet_length(input::text) FROM task_runs"
    " WHERE execution_id = %s AND step_id = %s AND item = ''",
    "output": "SELECT left(output::text, %s), octet_length(output::text) FROM task_runs"
    " WHERE execution_id = %s AND step_id = %s AND item = ''",
}
"""A run's or a step's input or output as JSON text cut at a length, and its full size."""
COMPLETED_OUTPUT_SQL = """
SELECT t.output FROM task_runs t JOIN workflow_runs w ON w.execution_id = t.execution_id
 WHERE (w.run_id = %(run)s OR w.logical_run_id = %(run)s)
   AND t.step_id = %(step)s AND t.item = %(item)s AND t.status = 'completed'
 ORDER BY w.segment DESC, t.ended_at DESC NULLS LAST
 LIMIT 1
"""
"""The output a step (or a map item, a loop iteration) of a run completed with, in any of the
run's segments: what a reset's replayed step returns (`switchyard.runtime.replay`)."""
CHILD_COMPLETED_OUTPUT_SQL = """
SELECT c.run_id, t.output FROM workflow_runs p
  JOIN workflow_runs c ON c.parent_execution_id = p.execution_id
  JOIN task_runs t ON t.execution_id = c.execution_id
 WHERE (p.run_id = %(parent)s OR p.logical_run_id = %(parent)s) AND c.parent_step = %(parent_step)s
   AND COALESCE(c.input -> %(link_key)s ->> 'item', '') = %(parent_item)s
   AND t.step_id = %(step)s AND t.item = %(item)s AND t.status = 'completed'
 ORDER BY c.started_at DESC, t.ended_at DESC NULLS LAST
 LIMIT 1
"""
"""The output a step of a child run completed with, the child named by its parent run, the
parent's `sub_workflow` step and that step's item (`:<n>` in the child's parent link): what a
replayed child's step returns. The newest child when the step started several (retries)."""
RUNNING_RECORDED_BY_RUN_ID_SQL = """
SELECT e.id, e.arn, e.next_event
  FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id
 WHERE r.run_id = %s AND e.status = 'RUNNING' AND e.options @> %s::jsonb
"""
RUNNING_RECORDED_BY_ARN_SQL = """
SELECT e.id, e.arn, e.next_event FROM sfn_executions e
 WHERE e.arn = %s AND e.status = 'RUNNING' AND e.options @> %s::jsonb
"""
"""The RUNNING executions of a run id or ARN whose options hold the given JSON (the
recorder's mark): what the AWS dashboard's catch-up reads."""
LOGICAL_RUN_SQL = """
SELECT COALESCE(logical_run_id, run_id) FROM workflow_runs WHERE run_id = %s
 ORDER BY started_at DESC LIMIT 1
"""


@dataclass(frozen=True)
class RunLocation:
    """Which execution a run id or ARN names."""

    execution_id: int
    arn: str


@dataclass(frozen=True)
class RunningExecution:
    """An execution still RUNNING, and the next history event its records have not seen."""

    id: int
    arn: str
    next_event: int


@dataclass(frozen=True)
class RunRow:
    execution_id: int
    arn: str
    """The execution's ARN (from the engine's `sfn_executions`)."""
    run_id: str
    workflow: str
    workflow_version: int | None
    status: str
    input: Any
    output: Any
    error: Any
    cost_usd: Decimal
    input_tokens: int
    output_tokens: int
    parent_execution_id: int | None
    parent_step: str | None
    started_at: datetime
    ended_at: datetime | None
    segment: int
    """1, or the place of a segment in a run that continued as new."""
    logical_run_id: str | None
    """A continued segment's first segment's run id; None for a first segment."""
    continued_from: str | None


@dataclass(frozen=True)
class TaskRunRow:
    execution_id: int
    step_id: str
    item: str
    """'' for a step; the map index (`[3]`) or loop iteration (`#2`) of an item."""
    status: str
    attempts: int
    input: Any
    output: Any
    error: Any
    cost_usd: Decimal
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    model: str | None
    provider: str | None
    started_at: datetime | None
    ended_at: datetime | None
    replayed_from: str | None = None
    """Of a reset run's step: the run whose recorded result it replayed instead of running."""


@dataclass(frozen=True)
class CompletedOutput:
    """A step's recorded output (`RunStore.completed_output`)."""

    output: Any


@dataclass(frozen=True)
class ChildOf:
    """A child run named by its parent: the parent's run id, the `sub_workflow` step that
    started it, and that step's item (`:<n>`, '' outside a map or loop)."""

    run_id: str
    step: str
    item: str


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


class RunStore:
    """Statements on one connection, in the caller's transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def _all(self, row: type[Row], query: str, params: Any = ()) -> list[Row]:
        return self._conn.cursor(row_factory=class_row(row)).execute(query, params).fetchall()

    # --- reads ---------------------------------------------------------------------------------

    def find(self, run: str) -> list[RunLocation]:
        """The runs a run id (the execution name) or an execution ARN names, newest first."""
        return self._all(RunLocation, FIND_RUN_SQL, (run, run))

    def execution_ids(self, run: str) -> list[int]:
        """The executions with run records that a run id (the execution name) or an execution
        ARN names, newest first."""
        sql = EXECUTIONS_BY_ARN_SQL if run.startswith("arn:") else EXECUTIONS_BY_RUN_ID_SQL
        return sorted((int(row[0]) for row in self._conn.execute(sql, (run,))), reverse=True)

    def running_recorded(self, run: str, options: str) -> list[RunningExecution]:
        """The RUNNING executions a run id or ARN names whose options contain `options` (a
        JSON object: the recorder marks the executions it mirrors from AWS)."""
        if run.startswith("arn:"):
            return self._all(RunningExecution, RUNNING_RECORDED_BY_ARN_SQL, (run, options))
        return self._all(RunningExecution, RUNNING_RECORDED_BY_RUN_ID_SQL, (run, options))

    def value(
        self, execution_id: int, which: Literal["input", "output"], *, limit: int
    ) -> tuple[str | None, int | None] | None:
        """The run's input or output as JSON text, cut at `limit` characters, and its size in
        bytes; None when there is no such run."""
        row = self._conn.execute(RUN_VALUE_SQL[which], (limit, execution_id)).fetchone()
        return (row[0], row[1]) if row else None

    def step_value(
        self, execution_id: int, step: str, which: Literal["input", "output"], *, limit: int
    ) -> tuple[str | None, int | None] | None:
        """A step's input or output, as `value`; None when the run has no such step."""
        params = (limit, execution_id, step)
        row = self._conn.execute(STEP_VALUE_SQL[which], params).fetchone()
        return (row[0], row[1]) if row else None

    def run(self, execution_id: int) -> RunRow | None:
        rows = self._all(RunRow, RUN_SQL, (execution_id,))
        return rows[0] if rows else None

    def runs_with_id(self, run_id: str) -> list[RunRow]:
        """The runs of this id (of several workflows, possibly), newest first."""
        return self._all(RunRow, RUNS_WITH_ID_SQL, (run_id,))

    def runs(self, *, status: str | None, workflow: str | None, limit: int) -> list[RunRow]:
        """The latest runs first, of one status and/or one workflow when given."""
        params = {"status": status or None, "workflow": workflow or None, "limit": limit}
        return self._all(RunRow, RUNS_SQL, params)

    def status(self, execution_id: int) -> str | None:
        row = self._conn.execute(STATUS_SQL, (execution_id,)).fetchone()
        return str(row[0]) if row else None

    def tasks(self, execution_id: int) -> list[TaskRunRow]:
        return self.tasks_of([execution_id])

    def tasks_of(self, execution_ids: Sequence[int]) -> list[TaskRunRow]:
        """The step records of several executions (a run's segments), in their order."""
        return self._all(TaskRunRow, TASK_RUNS_SQL, (list(execution_ids),))

    def completed_output(self, run_id: str, step_id: str, item: str) -> CompletedOutput | None:
        """What step `step_id` (`item`: '' or a map index `[3]` or loop iteration `#2`) of run
        `run_id` completed with; None when it did not complete (or the run is unknown)."""
        params = {"run": run_id, "step": step_id, "item": item}
        row = self._conn.execute(COMPLETED_OUTPUT_SQL, params).fetchone()
        return CompletedOutput(row[0]) if row else None

    def child_completed_output(
        self, parent: ChildOf, step_id: str, item: str
    ) -> tuple[str, CompletedOutput] | None:
        """What step `step_id` (`item` as in `completed_output`) of the child run `parent`
        names completed with, and that child's run id; None when it did not complete."""
        params = {"parent": parent.run_id, "parent_step": parent.step, "link_key": PARENT_LINK_KEY,
                  "parent_item": parent.item, "step": step_id, "item": item}  # fmt: skip
        row = self._conn.execute(CHILD_COMPLETED_OUTPUT_SQL, params).fetchone()
        return (str(row[0]), CompletedOutput(row[1])) if row else None

    def logical_run_id(self, run_id: str) -> str | None:
        """The logical run a run id belongs to (its own id, or its first segment's)."""
        row = self._conn.execute(LOGICAL_RUN_SQL, (run_id,)).fetchone()
        return str(row[0]) if row else None

    def newest_segment(self, logical_run_id: str) -> RunLocation | None:
        """The newest segment of a run that continued as new."""
        rows = self._all(RunLocation, NEWEST_SEGMENT_SQL, (logical_run_id,))
        return rows[0] if rows else None

    def segments(self, logical_run_id: str) -> list[Segment]:
        """The segments of a logical run, in order."""
        return self._all(Segment, SEGMENTS_SQL, {"run": logical_run_id})

    # --- writes (`RunRecords` decides them) ----------------------------------------------------

    def started(self, params: Sequence[Any]) -> None:
        self._conn.execute(START_SQL, params)

    def set_status(self, execution_id: int, status: str) -> None:
        self._conn.execute(RUN_STATUS_SQL, (status, execution_id))

    def resumed(self, execution_id: int) -> None:
        """A run waiting or paused at a gate runs again."""
        self._conn.execute(RUN_RESUMED_SQL, (execution_id,))

    def redriven(self, execution_id: int) -> None:
        self._conn.execute(REDRIVEN_SQL, (execution_id,))

    def scheduled(self, params: dict[str, Any]) -> None:
        self._conn.execute(SCHEDULED_SQL, params)

    def spent(self, params: Sequence[Any]) -> None:
        """A step's attempt spent: added to its record (created if needed)."""
        self._conn.execute(SPEND_SQL, params)

    def item_done(self, params: Sequence[Any]) -> None:
        self._conn.execute(ITEM_DONE_SQL, params)

    def run_spent(self, execution_id: int, cost: Decimal, tokens_in: int, tokens_out: int) -> None:
        self._conn.execute(RUN_SPEND_SQL, (cost, tokens_in, tokens_out, execution_id))

    def ancestors_spent(self, params: dict[str, Any]) -> None:
        """A sub-workflow's spend, added to every ancestor run and the step that started it."""
        self._conn.execute(ANCESTORS_SPEND_SQL, params)

    def recorded(self, params: Sequence[Any]) -> None:
        """A step's record (`$.steps.<id>`) as the run wrote it."""
        self._conn.execute(RECORD_SQL, params)

    def records_written(self, params: dict[str, Any]) -> None:
        """Step records written together (the whole `$.steps`)."""
        self._conn.execute(RECORDS_SQL, params)

    def finished(self, params: dict[str, Any]) -> None:
        self._conn.execute(FINISHED_SQL, params)

    def continued_steps(self, execution_id: int, at: datetime | None) -> None:
        """The run continued as new: its steps still open end with it, as `continued`."""
        self._conn.execute(CONTINUED_STEPS_SQL, (at, execution_id))

    def replayed(self, execution_id: int, step_id: str, item: str, run_id: str) -> None:
        """The step replayed run `run_id`'s recorded result instead of running."""
        self._conn.execute(REPLAYED_SQL, (run_id, execution_id, step_id, item))

    def close_unfinished_steps(
        self, execution_id: int, error: str | None, at: datetime | None
    ) -> None:
        self._conn.execute(UNFINISHED_STEPS_SQL, (error, at, execution_id))
