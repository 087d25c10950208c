"""The run records' read model: the reports that join the run records (`workflow_runs`,
`task_runs`) with the engine's tables and the gates. They only read; `RunStore` (`store.py`)
and `GateStore` write those tables. The dashboard (runs list, run page, workflow stats, cost
charts) and `local/stuck.py` (stuck runs) call `RunReports`; nothing else names these tables
in a read of several owners' tables (tests/unit/test_table_owners.py checks it).

Wide rows (a runs-list page, a run's page, its steps, the stuck runs' waits) come as mappings
keyed by the statements' column names, which the callers shape into their JSON; the
aggregates come as frozen rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, LiteralString, TypeVar

import psycopg
from psycopg.rows import class_row, dict_row

Row = TypeVar("Row")

# --- the runs list ---------------------------------------------------------------------------

RUNS_PAGE_SQL = """
SELECT r.execution_id, r.run_id, r.workflow, r.workflow_version, r.tenant, r.status,
       r.cost_usd, r.input_tokens, r.output_tokens, r.started_at, r.ended_at,
       r.parent_execution_id, r.segment, r.logical_run_id,
       (SELECT coalesce(json_agg(json_build_object('step', g.step_id, 'kind', g.kind,
                                                   'assignee', g.assignee)), '[]'::json)
          FROM gates g WHERE g.run_id = r.run_id AND g.status = 'open') AS waiting_on
  FROM workflow_runs r
 WHERE {where}
 ORDER BY r.started_at DESC, r.execution_id DESC
 LIMIT %(limit)s
"""
"""A keyset page of runs, newest first; `{where}` is only ever the fixed conditions of
`RunReports.runs_page` joined with AND (values are parameters)."""

# --- one run's page --------------------------------------------------------------------------

RUN_DETAIL_SQL = """
SELECT r.*, now() AS now, e.arn, d.definition,
       octet_length(r.input::text) AS input_bytes, octet_length(r.output::text) AS output_bytes,
       CASE WHEN octet_length(r.input::text) <= %(inline)s THEN r.input END AS input_inline,
       CASE WHEN octet_length(r.output::text) <= %(inline)s THEN r.output END AS output_inline,
       (SELECT run_id FROM workflow_runs p WHERE p.execution_id = r.parent_execution_id)
           AS parent_run_id,
       (SELECT count(*) FROM sfn_history h WHERE h.execution_id = r.execution_id) AS events
  FROM workflow_runs r
  JOIN sfn_executions e ON e.id = r.execution_id
  JOIN sfn_definitions d ON d.hash = e.definition_hash
 WHERE r.execution_id = %(id)s
"""
RUN_STEPS_SQL = """
SELECT step_id, item, status, attempts, error, cost_usd, input_tokens, output_tokens,
       cache_read_tokens, model, provider, started_at, ended_at, replayed_from,
       octet_length(output::text) AS output_bytes,
       CASE WHEN octet_length(output::text) <= %(inline)s THEN output END AS output_inline
  FROM task_runs WHERE execution_id = %(id)s
 ORDER BY started_at NULLS LAST, step_id, item
"""
RUN_OPEN_GATES_SQL = """
SELECT id, step_id, kind, tier, assignee, message, show, allow_edit, request, deadline,
       created_at
  FROM gates WHERE execution_arn = %s AND status = 'open' ORDER BY created_at
"""
CHILD_RUNS_SQL = """
SELECT run_id, parent_step, status FROM workflow_runs WHERE parent_execution_id = %s
 ORDER BY started_at LIMIT 1000
"""
TIMELINE_SQL = """
SELECT event_id, type, at, details FROM sfn_history WHERE execution_id = %s
 ORDER BY event_id DESC LIMIT %s
"""

# --- workflow stats and costs ----------------------------------------------------------------

WORKFLOWS_SQL = """
SELECT workflow, max(workflow_version) AS version, count(*) AS runs,
       count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE status IN ('failed', 'timed_out')) AS failed,
       count(*) FILTER (WHERE status IN ('running', 'waiting', 'paused')) AS open,
       sum(cost_usd) AS cost_usd, max(started_at) AS last_started
  FROM workflow_runs WHERE started_at >= now() - make_interval(days => %(days)s)
 GROUP BY workflow ORDER BY workflow
"""
WORKFLOW_SUMMARY_SQL = """
SELECT count(*) AS runs,
       count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE status IN ('failed', 'timed_out', 'cancelled')) AS failed,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM ended_at - started_at))
           FILTER (WHERE ended_at IS NOT NULL) AS p50_seconds,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM ended_at - started_at))
           FILTER (WHERE ended_at IS NOT NULL) AS p95_seconds,
       coalesce(sum(cost_usd), 0) AS cost_usd
  FROM workflow_runs
 WHERE workflow = %(name)s AND started_at >= now() - make_interval(days => %(days)s)
"""
WORKFLOW_VERSIONS_SQL = """
SELECT workflow_version AS version, count(*) AS runs, min(started_at) AS first_started,
       max(started_at) AS last_started
  FROM workflow_runs WHERE workflow = %s GROUP BY workflow_version
 ORDER BY workflow_version DESC NULLS LAST
"""
LATEST_DEFINITION_SQL = """
SELECT d.definition FROM sfn_state_machines m JOIN sfn_definitions d ON d.hash = m.definition_hash
 WHERE m.name = %s
"""
COST_PER_DAY_SQL = """
SELECT date_trunc('day', started_at) AS day, workflow AS key, sum(cost_usd) AS cost_usd,
       count(*) AS runs
  FROM workflow_runs
 WHERE started_at >= now() - make_interval(days => %(days)s)
 GROUP BY 1, 2 ORDER BY 1, 2
"""
WORKFLOW_COST_PER_DAY_SQL = """
SELECT date_trunc('day', started_at) AS day, workflow AS key, sum(cost_usd) AS cost_usd,
       count(*) AS runs
  FROM workflow_runs
 WHERE started_at >= now() - make_interval(days => %(days)s) AND workflow = %(name)s
 GROUP BY 1, 2 ORDER BY 1, 2
"""
COST_BY_WORKFLOW_SQL = """
SELECT workflow AS key, sum(cost_usd) AS cost_usd, count(*) AS runs,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
  FROM workflow_runs WHERE started_at >= now() - make_interval(days => %(days)s)
 GROUP BY 1 ORDER BY 2 DESC LIMIT 50
"""
COST_BY_TENANT_SQL = """
SELECT tenant AS key, sum(cost_usd) AS cost_usd, count(*) AS runs,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
  FROM workflow_runs WHERE started_at >= now() - make_interval(days => %(days)s)
 GROUP BY 1 ORDER BY 2 DESC LIMIT 50
"""
COST_BY_MODEL_SQL = """
SELECT coalesce(t.model, '(none)') AS key, sum(t.cost_usd) AS cost_usd,
       sum(t.input_tokens) AS input_tokens, sum(t.output_tokens) AS output_tokens
  FROM workflow_runs r JOIN task_runs t ON t.execution_id = r.execution_id
 WHERE r.started_at >= now() - make_interval(days => %(days)s) AND t.model IS NOT NULL
 GROUP BY 1 ORDER BY 2 DESC LIMIT 50
"""
BUDGET_PAUSES_SQL = """
SELECT g.run_id, g.workflow, g.step_id, g.status, g.created_at, g.decided_at, g.reviewer,
       g.request
  FROM gates g
 WHERE g.kind = 'budget' AND g.created_at >= now() - make_interval(days => %(days)s)
 ORDER BY g.created_at DESC LIMIT 100
"""

# --- stuck runs ------------------------------------------------------------------------------

STUCK_WAITS_SQL = """
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
), waits (execution_id, frame_id, kind, step, due_at, child_execution_id) AS (
    SELECT t.execution_id, t.frame_id, t.kind, t.parameters->'Payload'->>'step_id', due.at,
           child.execution_id
      FROM runs
      JOIN sfn_tasks t ON t.execution_id = runs.execution_id
      LEFT JOIN LATERAL (
           SELECT min(m.fire_at) AS at FROM sfn_timers m
            WHERE m.execution_id = t.execution_id AND m.frame_id = t.frame_id) due ON TRUE
      LEFT JOIN LATERAL (
           SELECT c.execution_id FROM workflow_runs c
             JOIN sfn_executions ce ON ce.id = c.execution_id
            WHERE t.kind = 'child' AND c.parent_execution_id = t.execution_id
              AND ce.status = 'RUNNING' AND (ce.parent->>'frame')::int = t.frame_id
            ORDER BY c.execution_id DESC LIMIT 1) child ON TRUE
     WHERE (due.at IS NULL OR due.at < %(idle_since)s)
       AND NOT (t.token IS NOT NULL
                AND EXISTS (SELECT 1 FROM gates g WHERE g.token = t.token AND g.status = 'open'))
    UNION ALL
    SELECT m.execution_id, m.frame_id, 'timer', NULL, m.fire_at, NULL
      FROM runs
      JOIN sfn_timers m ON m.execution_id = runs.execution_id
     WHERE m.fire_at < %(idle_since)s
       AND NOT EXISTS (SELECT 1 FROM sfn_tasks t
                        WHERE t.execution_id = m.execution_id AND t.frame_id = m.frame_id)
    UNION ALL
    SELECT runs.execution_id, NULL, 'none', NULL, NULL, NULL
      FROM runs
     WHERE NOT EXISTS (SELECT 1 FROM sfn_tasks t WHERE t.execution_id = runs.execution_id)
       AND NOT EXISTS (SELECT 1 FROM sfn_timers m WHERE m.execution_id = runs.execution_id)
)
SELECT r.execution_id, r.run_id, r.workflow, r.workflow_version, r.status, r.cost_usd,
       r.input_tokens, r.output_tokens, r.started_at, r.ended_at, runs.selected,
       COALESCE(last.at, r.started_at) AS last_transition_at,
       w.kind, f.data->>'state' AS state, w.step, w.due_at,
       w.child_execution_id, c.run_id AS child_run_id, ce.parent->>'step' AS child_step
  FROM waits w
  JOIN runs ON runs.execution_id = w.execution_id
  JOIN workflow_runs r ON r.execution_id = w.execution_id
  LEFT JOIN sfn_frames f ON f.execution_id = w.execution_id AND f.frame_id = w.frame_id
  LEFT JOIN workflow_runs c ON c.execution_id = w.child_execution_id
  LEFT JOIN sfn_executions ce ON ce.id = w.child_execution_id
  LEFT JOIN LATERAL (
       SELECT h.at FROM sfn_history h
        WHERE h.execution_id = r.execution_id
        ORDER BY h.event_id DESC LIMIT 1) last ON TRUE
 WHERE COALESCE(last.at, r.started_at) < %(idle_since)s
"""
"""What the open runs asked for (and their open sub-workflow runs, since whether a parent is
stuck depends on its children) wait on without a known end, when they made no transition since
`idle_since` (now less the threshold): a task in flight that no open gate holds and whose
frame's earliest timer (its timeout or heartbeat) is not still ahead, a timer of no task (a
Wait, a backoff) that fell due before `idle_since`, or nothing in flight at all (`none`). A task
that runs a sub-workflow names the child (`child_execution_id`): it waits without end when the
child is itself stuck, which `local/stuck.py` decides. Waits on gates and on timers still ahead
are left out here, so the rows are few however many runs are parked; the tasks and timers
tables hold only work in flight."""


# --- rows ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenGate:
    """An open gate of a run, as its page shows it."""

    id: str
    step_id: str
    kind: str
    tier: int
    assignee: str | None
    message: str | None
    show: Any
    allow_edit: bool
    request: Any
    deadline: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class ChildRun:
    run_id: str
    parent_step: str | None
    status: str


@dataclass(frozen=True)
class TimelineEvent:
    event_id: int
    type: str
    at: datetime
    details: Any


@dataclass(frozen=True)
class WorkflowTotals:
    """One workflow's runs over the last days."""

    workflow: str
    version: int | None
    runs: int
    succeeded: int
    failed: int
    open: int
    cost_usd: Decimal | None
    last_started: datetime | None


@dataclass(frozen=True)
class WorkflowSummary:
    runs: int
    succeeded: int
    failed: int
    p50_seconds: float | None
    p95_seconds: float | None
    cost_usd: Decimal


@dataclass(frozen=True)
class VersionRuns:
    version: int | None
    runs: int
    first_started: datetime
    last_started: datetime


@dataclass(frozen=True)
class DayCost:
    day: datetime
    key: str
    cost_usd: Decimal | None
    runs: int


@dataclass(frozen=True)
class KeyCost:
    """Spend of one workflow or tenant."""

    key: str
    cost_usd: Decimal | None
    runs: int
    input_tokens: int | None
    output_tokens: int | None


@dataclass(frozen=True)
class ModelCost:
    key: str
    cost_usd: Decimal | None
    input_tokens: int | None
    output_tokens: int | None


@dataclass(frozen=True)
class BudgetPause:
    run_id: str
    workflow: str
    step_id: str
    status: str
    created_at: datetime
    decided_at: datetime | None
    reviewer: str | None
    request: Any


def like_prefix(text: str) -> str:
    """A LIKE pattern matching what starts with `text` (its wildcards escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class RunReports:
    """Read-only statements on one connection, in the caller's transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def _all(self, row: type[Row], query: LiteralString, params: Any = ()) -> list[Row]:
        return self._conn.cursor(row_factory=class_row(row)).execute(query, params).fetchall()

    def _dicts(self, query: LiteralString, params: Any = ()) -> list[dict[str, Any]]:
        return self._conn.cursor(row_factory=dict_row).execute(query, params).fetchall()

    # --- the runs list -------------------------------------------------------------------------

    def runs_page(
        self,
        *,
        limit: int,
        status: str | None = None,
        workflow: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        run_id_prefix: str | None = None,
        before: tuple[datetime, int] | None = None,
    ) -> list[dict[str, Any]]:
        """Up to `limit` runs, newest first, older than `before` (a row's `(started_at,
        execution_id)`: the keyset cursor) when given."""
        where = ["TRUE"]
        params: dict[str, Any] = {"limit": limit}
        if status:
            where.append("r.status = %(status)s")
            params["status"] = status
        if workflow:
            where.append("r.workflow = %(workflow)s")
            params["workflow"] = workflow
        if since:
            where.append("r.started_at >= %(since)s")
            params["since"] = since
        if until:
            where.append("r.started_at < %(until)s")
            params["until"] = until
        if run_id_prefix:
            where.append("r.run_id LIKE %(search)s")
            params["search"] = like_prefix(run_id_prefix)
        if before:
            where.append("(r.started_at, r.execution_id) < (%(c_started)s, %(c_execution)s)")
            params.update(c_started=before[0], c_execution=before[1])
        sql = RUNS_PAGE_SQL.format(where=" AND ".join(where))  # fixed conditions only
        cursor = self._conn.cursor(row_factory=dict_row)
        return cursor.execute(sql.encode(), params).fetchall()

    # --- one run's page ------------------------------------------------------------------------

    def run_detail(self, execution_id: int, *, inline: int) -> dict[str, Any] | None:
        """The run's record with its ARN, definition, parent run, history length, and its
        input and output when at most `inline` bytes (their sizes either way)."""
        rows = self._dicts(RUN_DETAIL_SQL, {"id": execution_id, "inline": inline})
        return rows[0] if rows else None

    def steps(self, execution_id: int, *, inline: int) -> list[dict[str, Any]]:
        """The run's step and item records, outputs of at most `inline` bytes included."""
        return self._dicts(RUN_STEPS_SQL, {"id": execution_id, "inline": inline})

    def open_gates(self, execution_arn: str) -> list[OpenGate]:
        return self._all(OpenGate, RUN_OPEN_GATES_SQL, (execution_arn,))

    def children(self, execution_id: int) -> list[ChildRun]:
        """The run's sub-workflow runs (the first 1,000), oldest first."""
        return self._all(ChildRun, CHILD_RUNS_SQL, (execution_id,))

    def timeline(self, execution_id: int, limit: int) -> list[TimelineEvent]:
        """The run's newest `limit` history events, newest first."""
        return self._all(TimelineEvent, TIMELINE_SQL, (execution_id, limit))

    # --- workflow stats and costs --------------------------------------------------------------

    def workflows(self, days: int) -> list[WorkflowTotals]:
        return self._all(WorkflowTotals, WORKFLOWS_SQL, {"days": days})

    def workflow_summary(self, name: str, days: int) -> WorkflowSummary:
        return self._all(WorkflowSummary, WORKFLOW_SUMMARY_SQL, {"name": name, "days": days})[0]

    def versions(self, name: str) -> list[VersionRuns]:
        """The workflow's versions that have runs, newest first."""
        return self._all(VersionRuns, WORKFLOW_VERSIONS_SQL, (name,))

    def latest_definition(self, name: str) -> str | None:
        """The state machine definition installed under `name`, if any."""
        row = self._conn.execute(LATEST_DEFINITION_SQL, (name,)).fetchone()
        return str(row[0]) if row else None

    def cost_per_day(self, days: int, workflow: str | None = None) -> list[DayCost]:
        """Spend per day and workflow (of one workflow when given)."""
        if workflow is None:
            return self._all(DayCost, COST_PER_DAY_SQL, {"days": days})
        return self._all(DayCost, WORKFLOW_COST_PER_DAY_SQL, {"days": days, "name": workflow})

    def cost_by_workflow(self, days: int) -> list[KeyCost]:
        return self._all(KeyCost, COST_BY_WORKFLOW_SQL, {"days": days})

    def cost_by_tenant(self, days: int) -> list[KeyCost]:
        return self._all(KeyCost, COST_BY_TENANT_SQL, {"days": days})

    def cost_by_model(self, days: int) -> list[ModelCost]:
        return self._all(ModelCost, COST_BY_MODEL_SQL, {"days": days})

    def budget_pauses(self, days: int) -> list[BudgetPause]:
        """The budget gates opened in the last days (the newest 100)."""
        return self._all(BudgetPause, BUDGET_PAUSES_SQL, {"days": days})

    # --- stuck runs ----------------------------------------------------------------------------

    def stuck_waits(
        self,
        *,
        idle_since: datetime,
        execution_ids: Sequence[int] | None = None,
        status: str | None = None,
        workflow: str | None = None,
    ) -> list[dict[str, Any]]:
        """`STUCK_WAITS_SQL`'s rows: a run's columns and one wait each."""
        params = {
            "idle_since": idle_since,
            "ids": list(execution_ids) if execution_ids is not None else None,
            "status": status,
            "workflow": workflow,
        }
        return self._dicts(STUCK_WAITS_SQL, params)
