"""One run as its page shows it: totals and budgets, each step (status, attempts, duration,
model, tokens, USD, error), its graph, the open gates with their data, child runs, the event
timeline. Values larger than `INLINE_BYTES` are left out and fetched on demand."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any, Literal

import psycopg

from switchyard.dashboard.errors import (
    BadQueryError,
    ConflictError,
    NotFoundError,
    UnavailableError,
)
from switchyard.dashboard.graph import workflow_graph
from switchyard.dashboard.runs import iso, run_row
from switchyard.model.durations import parse_duration
from switchyard.records.reports import RunReports, TimelineEvent
from switchyard.records.segments import logical_run
from switchyard.records.step_status import items_status
from switchyard.records.store import RunStore
from switchyard.runtime.large_outputs import OutputNotFoundError, OutputStore

log = logging.getLogger(__name__)

INLINE_BYTES = 16 * 1024
TIMELINE_EVENTS = 500
MAX_VALUE_BYTES = 8 * 1024 * 1024
"""A value fetched on demand is cut here: a browser tab is not a place for more."""

Value = Literal["input", "output"]


def executions_of(conn: psycopg.Connection[Any], run_id: str) -> list[int]:
    """The executions a run id (the execution name) or an execution ARN names, newest first."""
    return RunStore(conn).execution_ids(run_id)


def locate(conn: psycopg.Connection[Any], run_id: str) -> int:
    found = executions_of(conn, run_id)
    if not found:
        raise NotFoundError(
            f"no run {run_id!r}: the runs list (/ui/) shows the runs there are",
            code="run_not_found",
        )
    if len(found) > 1:
        raise ConflictError(
            f"{run_id!r} names runs of several workflows: give the execution ARN",
            code="ambiguous_run_id",
        )
    return found[0]


def _usd(value: Any) -> float:
    return round(float(value), 6) if isinstance(value, Decimal | int | float) else 0.0


def _step(rows: list[dict[str, Any]], children: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    own = next((r for r in rows if r["item"] == ""), None)
    main = own or rows[0]
    items = [r for r in rows if r["item"] != ""]
    return {
        "status": own["status"] if own else items_status(r["status"] for r in items),
        "attempts": max(int(r["attempts"]) for r in rows),
        "model": next((r["model"] for r in rows if r["model"]), None),
        "provider": next((r["provider"] for r in rows if r["provider"]), None),
        "cost_usd": round(sum(_usd(r["cost_usd"]) for r in rows), 6),
        "tokens": {
            "input": sum(int(r["input_tokens"]) for r in rows),
            "output": sum(int(r["output_tokens"]) for r in rows),
            "cache_read": sum(int(r["cache_read_tokens"]) for r in rows),
        },
        "started_at": iso(min((r["started_at"] for r in rows if r["started_at"]), default=None)),
        "ended_at": iso(main["ended_at"]),
        "error": own["error"] if own else next((r["error"] for r in items if r["error"]), None),
        "output": own["output_inline"] if own else None,
        "output_bytes": own["output_bytes"] if own else None,
        "items": {
            "total": len(items),
            "completed": sum(1 for r in items if r["status"] == "completed"),
            "failed": sum(1 for r in items if r["status"] == "failed"),
        }
        if items
        else None,
        "children": children.get(str(main["step_id"]), []),
        "replayed_from": next((r["replayed_from"] for r in rows if r["replayed_from"]), None),
    }


def _event(row: TimelineEvent) -> dict[str, Any]:
    details = row.details if isinstance(row.details, dict) else {}
    inner = next((v for k, v in details.items() if k.endswith("EventDetails")), None)
    inner = inner if isinstance(inner, dict) else {}
    return {
        "id": row.event_id,
        "type": row.type,
        "at": iso(row.at),
        "state": inner.get("name"),
        "error": inner.get("error"),
    }


def _budget(spec: dict[str, Any] | None, run: dict[str, Any], steps: int) -> list[dict[str, Any]]:
    """What is left of each of the workflow's budgets."""
    if not spec:
        return []
    out: list[dict[str, Any]] = []
    if spec.get("max_cost_usd") is not None:
        limit = float(spec["max_cost_usd"])
        out.append({"kind": "usd", "limit": limit, "used": _usd(run["cost_usd"])})
    if spec.get("max_steps") is not None:
        out.append({"kind": "steps", "limit": int(spec["max_steps"]), "used": steps})
    if spec.get("max_tokens") is not None:
        used = int(run["input_tokens"]) + int(run["output_tokens"])
        out.append({"kind": "tokens", "limit": int(spec["max_tokens"]), "used": used})
    if spec.get("max_duration") is not None:
        try:
            seconds = float(parse_duration(spec["max_duration"]))
        except (TypeError, ValueError):
            seconds = None
        if seconds is not None:
            end = run["ended_at"] or run["now"]
            used_s = (end - run["started_at"]).total_seconds()
            out.append({"kind": "seconds", "limit": seconds, "used": round(used_s, 3)})
    for item in out:
        item["left"] = round(max(item["limit"] - item["used"], 0), 6)
    return out


def run_detail(conn: psycopg.Connection[Any], run_id: str) -> dict[str, Any]:
    execution_id = locate(conn, run_id)
    reports = RunReports(conn)
    run = reports.run_detail(execution_id, inline=INLINE_BYTES)
    if run is None:  # deleted between the two reads
        raise NotFoundError(f"no run {run_id!r}", code="run_not_found")
    logical = None
    if run["segment"] > 1 or run["status"] == "continued":  # continued as new: shown whole
        logical = logical_run(conn, str(run["logical_run_id"] or run["run_id"]))
    executions = [execution_id]
    if logical is not None and len(logical.segments) > 1:
        executions = [s.execution_id for s in logical.segments]
        if executions[-1] != execution_id:
            execution_id = executions[-1]
            run = reports.run_detail(execution_id, inline=INLINE_BYTES)
            if run is None:
                raise NotFoundError(f"no run {run_id!r}", code="run_not_found")
        run = {
            **run,
            "run_id": logical.run_id,
            "cost_usd": logical.cost_usd,
            "input_tokens": logical.input_tokens,
            "output_tokens": logical.output_tokens,
            "started_at": logical.segments[0].started_at,
        }
    tasks = [
        task for execution in executions for task in reports.steps(execution, inline=INLINE_BYTES)
    ]
    gates = reports.open_gates(run["arn"])
    children: dict[str, list[dict[str, Any]]] = {}
    for child in reports.children(execution_id):
        children.setdefault(str(child.parent_step), []).append(
            {"run_id": child.run_id, "status": child.status}
        )
    events = reports.timeline(execution_id, TIMELINE_EVENTS)
    by_step: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        by_step.setdefault(str(task["step_id"]), []).append(task)
    steps = {step_id: _step(rows, children) for step_id, rows in by_step.items()}
    graph = workflow_graph(str(run["definition"]), list(by_step))
    summary = run_row({**run, "waiting_on": [
        {"step": g.step_id, "kind": g.kind, "assignee": g.assignee} for g in gates
    ]})  # fmt: skip
    return {
        **summary,
        "execution_arn": run["arn"],
        "parent_run_id": run["parent_run_id"],
        "error": run["error"],
        "input": run["input_inline"],
        "input_bytes": run["input_bytes"],
        "output": run["output_inline"],
        "output_bytes": run["output_bytes"],
        "steps": steps,
        "graph": graph["nodes"],
        "budgets": _budget(graph["budget"], run, len(by_step)),
        "gates": [
            {
                "id": g.id,
                "step": g.step_id,
                "kind": g.kind,
                "tier": g.tier,
                "assignee": g.assignee,
                "message": g.message,
                "show": g.show,
                "allow_edit": g.allow_edit,
                "request": g.request,
                "deadline": iso(g.deadline),
                "opened_at": iso(g.created_at),
            }
            for g in gates
        ],
        "timeline": {"events": [_event(e) for e in reversed(events)], "total": run["events"]},
        "segments": [seg.as_json() for seg in logical.segments]
        if logical is not None and len(executions) > 1
        else None,
    }


def run_value(
    conn: psycopg.Connection[Any], run_id: str, which: Value, step: str | None
) -> tuple[str, int]:
    """A run's or a step's input or output as JSON text (cut at `MAX_VALUE_BYTES`), and its
    full size in bytes."""
    execution_id = locate(conn, run_id)
    store = RunStore(conn)
    if step is None:
        row = store.value(execution_id, which, limit=MAX_VALUE_BYTES)
    else:
        row = store.step_value(execution_id, step, which, limit=MAX_VALUE_BYTES)
        if row is None:
            raise NotFoundError(f"run {run_id!r} has no step {step!r}", code="step_not_found")
    if row is None or row[0] is None:
        return "null", 4
    return row[0], int(row[1] or 0)


def blob_of_run(conn: psycopg.Connection[Any], run_id: str, key: str) -> str:
    """`key`, when it names a large value of this run (a `$switchyard_ref` of one of its
    outputs): the runtime keys each by the run's id first, so only keys under it."""
    locate(conn, run_id)
    if run_id not in key.split("/")[:2]:
        raise NotFoundError(f"{key!r} is not a value of run {run_id!r}", code="blob_not_found")
    return key


def blob_text(store: OutputStore, key: str, limit: int = MAX_VALUE_BYTES) -> tuple[str, int]:
    """The start of a large value (at most `limit` bytes are read) as text, and its full size."""
    try:
        data, size = store.get_start(key, limit)
    except OutputNotFoundError:
        raise NotFoundError(
            f"the value {key!r} is not in the output store: it expired, or this run's outputs"
            " are kept elsewhere",
            code="blob_not_found",
        ) from None
    except Exception as exc:  # the store's own failure (S3 refused or unreachable): say so
        log.warning("output store read failed: %s", type(exc).__name__)
        raise UnavailableError(
            "the output store could not be read just now; try again", code="unavailable"
        ) from None
    return data.decode("utf-8", errors="replace"), size


def check_value(which: str) -> Value:
    if which not in ("input", "output"):
        raise BadQueryError(f"ask for 'input' or 'output', not {which!r}")
    return which  # type: ignore[return-value]
