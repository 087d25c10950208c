"""Aggregates over the run records: per workflow (runs, success rate, p50/p95 duration, cost per
day) and spend (by workflow, model, tenant and day; budget pauses), over the last `days` days."""

from __future__ import annotations

from typing import Any

import psycopg

from switchyard.dashboard.errors import BadQueryError, NotFoundError
from switchyard.dashboard.graph import workflow_graph
from switchyard.dashboard.runs import RunFilter, iso, runs_page
from switchyard.records.reports import DayCost, KeyCost, RunReports

MAX_DAYS = 366


def check_days(days: int) -> int:
    if not 1 <= days <= MAX_DAYS:
        raise BadQueryError(f"days must be from 1 to {MAX_DAYS}, not {days}")
    return days


def _f(value: Any) -> float:
    return round(float(value), 6) if value is not None else 0.0


def workflows(conn: psycopg.Connection[Any], days: int) -> list[dict[str, Any]]:
    return [
        {
            "name": r.workflow,
            "version": r.version,
            "runs": r.runs,
            "succeeded": r.succeeded,
            "failed": r.failed,
            "open": r.open,
            "success_rate": _rate(r.succeeded, r.succeeded + r.failed),
            "cost_usd": _f(r.cost_usd),
            "last_started": iso(r.last_started),
        }
        for r in RunReports(conn).workflows(days)
    ]


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _per_day(rows: list[DayCost]) -> list[dict[str, Any]]:
    return [
        {"day": r.day.date().isoformat(), "key": r.key, "cost_usd": _f(r.cost_usd),
         "runs": r.runs}
        for r in rows
    ]  # fmt: skip


def workflow_detail(conn: psycopg.Connection[Any], name: str, days: int) -> dict[str, Any]:
    reports = RunReports(conn)
    versions = reports.versions(name)
    definition = reports.latest_definition(name)
    if not versions and definition is None:
        raise NotFoundError(
            f"no workflow {name!r} has runs or is installed: /ui/workflows lists them",
            code="workflow_not_found",
        )
    summary = reports.workflow_summary(name, days)
    graph = workflow_graph(definition, []) if definition is not None else {"nodes": []}
    return {
        "name": name,
        "days": days,
        "versions": [
            {
                "version": v.version,
                "runs": v.runs,
                "first_started": iso(v.first_started),
                "last_started": iso(v.last_started),
            }
            for v in versions
        ],
        "graph": graph["nodes"],
        "runs": summary.runs,
        "succeeded": summary.succeeded,
        "failed": summary.failed,
        "success_rate": _rate(summary.succeeded, summary.succeeded + summary.failed),
        "p50_seconds": summary.p50_seconds,
        "p95_seconds": summary.p95_seconds,
        "cost_usd": _f(summary.cost_usd),
        "cost_per_day": _per_day(reports.cost_per_day(days, workflow=name)),
        "recent": runs_page(conn, RunFilter(workflow=name, limit=20))["runs"],
    }


def _by(rows: list[KeyCost]) -> list[dict[str, Any]]:
    return [
        {"key": r.key, "cost_usd": _f(r.cost_usd), "runs": r.runs,
         "tokens": {"input": int(r.input_tokens or 0), "output": int(r.output_tokens or 0)}}
        for r in rows
    ]  # fmt: skip


def costs(conn: psycopg.Connection[Any], days: int) -> dict[str, Any]:
    reports = RunReports(conn)
    models = reports.cost_by_model(days)
    pauses = reports.budget_pauses(days)
    return {
        "days": days,
        "by_workflow": _by(reports.cost_by_workflow(days)),
        "by_tenant": _by(reports.cost_by_tenant(days)),
        "by_model": [
            {
                "key": m.key,
                "cost_usd": _f(m.cost_usd),
                "tokens": {"input": int(m.input_tokens or 0), "output": int(m.output_tokens or 0)},
            }
            for m in models
        ],
        "by_day": _per_day(reports.cost_per_day(days)),
        "budget_pauses": [
            {
                "run_id": p.run_id,
                "workflow": p.workflow,
                "step": p.step_id,
                "status": p.status,
                "opened_at": iso(p.created_at),
                "decided_at": iso(p.decided_at),
                "reviewer": p.reviewer,
                "request": p.request,
            }
            for p in pauses
        ],
    }
