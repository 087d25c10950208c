"""Aggregates over the run records: per workflow (runs, success rate, p50/p95 duration, cost per
day) and spend (by workflow, model, tenant and day; budget pauses), over the last `days` days."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

from switchyard.dashboard.errors import BadQueryError, NotFoundError
from switchyard.dashboard.graph import workflow_graph
from switchyard.dashboard.runs import RunFilter, iso, runs_page

MAX_DAYS = 366

_WORKFLOWS_SQL = """
SELECT workflow, max(workflow_version) AS version, count(*) AS runs,
       count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE status IN ('failed', 'timed_out')) AS failed,
       count(*) FILTER (WHERE status IN ('running', 'waiting', 'paused')) AS open,
       sum(cost_usd) AS cost_usd, max(started_at) AS last_started
  FROM workflow_runs WHERE started_at >= now() - make_interval(days => %(days)s)
 GROUP BY workflow ORDER BY workflow
"""
_SUMMARY_SQL = """
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
_VERSIONS_SQL = """
SELECT workflow_version AS version, count(*) AS runs, min(started_at) AS first_started,
       max(started_at) AS last_started
  FROM workflow_runs WHERE workflow = %s GROUP BY workflow_version
 ORDER BY workflow_version DESC NULLS LAST
"""
_PER_DAY_SQL = """
SELECT date_trunc('day', started_at) AS day, {key} AS key, sum(cost_usd) AS cost_usd,
       count(*) AS runs
  FROM workflow_runs
 WHERE started_at >= now() - make_interval(days => %(days)s) {where}
 GROUP BY 1, 2 ORDER BY 1, 2
"""
_BY_MODEL_SQL = """
SELECT coalesce(t.model, '(none)') AS key, sum(t.cost_usd) AS cost_usd,
       sum(t.input_tokens) AS input_tokens, sum(t.output_tokens) AS output_tokens
  FROM workflow_runs r JOIN task_runs t ON t.execution_id = r.execution_id
 WHERE r.started_at >= now() - make_interval(days => %(days)s) AND t.model IS NOT NULL
 GROUP BY 1 ORDER BY 2 DESC LIMIT 50
"""
_BY_SQL = """
SELECT {key} AS key, sum(cost_usd) AS cost_usd, count(*) AS runs,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
  FROM workflow_runs WHERE started_at >= now() - make_interval(days => %(days)s)
 GROUP BY 1 ORDER BY 2 DESC LIMIT 50
"""
_PAUSES_SQL = """
SELECT g.run_id, g.workflow, g.step_id, g.status, g.created_at, g.decided_at, g.reviewer,
       g.request
  FROM gates g
 WHERE g.kind = 'budget' AND g.created_at >= now() - make_interval(days => %(days)s)
 ORDER BY g.created_at DESC LIMIT 100
"""
_LATEST_DEFINITION_SQL = """
SELECT d.definition FROM sfn_state_machines m JOIN sfn_definitions d ON d.hash = m.definition_hash
 WHERE m.name = %s
"""


def check_days(days: int) -> int:
    if not 1 <= days <= MAX_DAYS:
        raise BadQueryError(f"days must be from 1 to {MAX_DAYS}, not {days}")
    return days


def _f(value: Any) -> float:
    return round(float(value), 6) if value is not None else 0.0


def workflows(conn: psycopg.Connection[Any], days: int) -> list[dict[str, Any]]:
    rows = conn.cursor(row_factory=dict_row).execute(_WORKFLOWS_SQL, {"days": days}).fetchall()
    return [
        {
            "name": r["workflow"],
            "version": r["version"],
            "runs": r["runs"],
            "succeeded": r["succeeded"],
            "failed": r["failed"],
            "open": r["open"],
            "success_rate": _rate(r["succeeded"], r["succeeded"] + r["failed"]),
            "cost_usd": _f(r["cost_usd"]),
            "last_started": iso(r["last_started"]),
        }
        for r in rows
    ]


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _per_day(
    conn: psycopg.Connection[Any], key: str, days: int, where: str = "", **params: Any
) -> list[dict[str, Any]]:
    sql = _PER_DAY_SQL.format(key=key, where=where)  # fixed expressions only
    rows = conn.cursor(row_factory=dict_row).execute(sql.encode(), {"days": days, **params})
    return [
        {"day": r["day"].date().isoformat(), "key": r["key"], "cost_usd": _f(r["cost_usd"]),
         "runs": r["runs"]}
        for r in rows.fetchall()
    ]  # fmt: skip


def workflow_detail(conn: psycopg.Connection[Any], name: str, days: int) -> dict[str, Any]:
    cursor = conn.cursor(row_factory=dict_row)
    versions = cursor.execute(_VERSIONS_SQL, (name,)).fetchall()
    definition = conn.execute(_LATEST_DEFINITION_SQL, (name,)).fetchone()
    if not versions and definition is None:
        raise NotFoundError(
            f"no workflow {name!r} has runs or is installed: /ui/workflows lists them",
            code="workflow_not_found",
        )
    summary = cursor.execute(_SUMMARY_SQL, {"name": name, "days": days}).fetchone() or {}
    graph = workflow_graph(str(definition[0]), []) if definition else {"nodes": []}
    return {
        "name": name,
        "days": days,
        "versions": [
            {
                "version": v["version"],
                "runs": v["runs"],
                "first_started": iso(v["first_started"]),
                "last_started": iso(v["last_started"]),
            }
            for v in versions
        ],
        "graph": graph["nodes"],
        "runs": summary.get("runs", 0),
        "succeeded": summary.get("succeeded", 0),
        "failed": summary.get("failed", 0),
        "success_rate": _rate(
            summary.get("succeeded", 0), summary.get("succeeded", 0) + summary.get("failed", 0)
        ),
        "p50_seconds": summary.get("p50_seconds"),
        "p95_seconds": summary.get("p95_seconds"),
        "cost_usd": _f(summary.get("cost_usd")),
        "cost_per_day": _per_day(conn, "workflow", days, "AND workflow = %(name)s", name=name),
        "recent": runs_page(conn, RunFilter(workflow=name, limit=20))["runs"],
    }


def _by(conn: psycopg.Connection[Any], key: str, days: int) -> list[dict[str, Any]]:
    rows = conn.cursor(row_factory=dict_row).execute(
        _BY_SQL.format(key=key).encode(), {"days": days}
    )
    return [
        {"key": r["key"], "cost_usd": _f(r["cost_usd"]), "runs": r["runs"],
         "tokens": {"input": int(r["input_tokens"] or 0), "output": int(r["output_tokens"] or 0)}}
        for r in rows.fetchall()
    ]  # fmt: skip


def costs(conn: psycopg.Connection[Any], days: int) -> dict[str, Any]:
    cursor = conn.cursor(row_factory=dict_row)
    models = cursor.execute(_BY_MODEL_SQL, {"days": days}).fetchall()
    pauses = cursor.execute(_PAUSES_SQL, {"days": days}).fetchall()
    return {
        "days": days,
        "by_workflow": _by(conn, "workflow", days),
        "by_tenant": _by(conn, "tenant", days),
        "by_model": [
            {
                "key": m["key"],
                "cost_usd": _f(m["cost_usd"]),
                "tokens": {
                    "input": int(m["input_tokens"] or 0),
                    "output": int(m["output_tokens"] or 0),
                },
            }
            for m in models
        ],
        "by_day": _per_day(conn, "workflow", days),
        "budget_pauses": [
            {
                "run_id": p["run_id"],
                "workflow": p["workflow"],
                "step": p["step_id"],
                "status": p["status"],
                "opened_at": iso(p["created_at"]),
                "decided_at": iso(p["decided_at"]),
                "reviewer": p["reviewer"],
                "request": p["request"],
            }
            for p in pauses
        ],
    }
