"""What a run looks like to people and scripts: `run --json`, `runs show`, live progress.

Built from the run records (workflow_runs, task_runs) and the open gates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.rows import dict_row

from switchyard.gates.model import Gate
from switchyard.gates.store import _gate
from switchyard.records.segments import logical_run, newest_segment, segment_fields

RUN_STATUSES = (
    "running",
    "waiting",
    "paused",
    "succeeded",
    "failed",
    "cancelled",
    "timed_out",
    "continued",
)
"""`continued`: a segment that handed its run on to the next (continue-as-new); the run as a
whole has its last segment's status."""


class RunNotFoundError(LookupError):
    pass


class AmbiguousRunError(RunNotFoundError):
    """A run id that names runs of several workflows (their execution ARNs tell them apart)."""


@dataclass
class RunView:
    execution_id: int
    execution_arn: str
    data: dict[str, Any]
    gates: list[Gate]

    @property
    def status(self) -> str:
        return str(self.data["status"])


def _number(value: Any) -> float:
    return float(value) if isinstance(value, Decimal | int | float) else 0.0


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


RUN_SQL = (
    "SELECT r.*, e.arn FROM workflow_runs r JOIN sfn_executions e ON e.id = r.execution_id"
    " WHERE r.execution_id = %s"
)
FIND_RUN_SQL = """
SELECT e.id, e.arn
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


def find_run(conn: psycopg.Connection[Any], run_id: str) -> tuple[int, str]:
    """(execution id, ARN) of a run named by its id (the execution name) or its ARN."""
    rows = conn.execute(FIND_RUN_SQL, (run_id, run_id)).fetchall()
    if not rows:
        raise RunNotFoundError(f"no run {run_id!r}; `switchyard runs list` shows the runs")
    if len(rows) > 1 and not run_id.startswith("arn:"):
        arns = ", ".join(r[1] for r in rows)
        raise AmbiguousRunError(f"{run_id!r} names several runs ({arns}); give the ARN")
    if not run_id.startswith("arn:"):  # a run that continued as new: its current segment
        newest = newest_segment(conn, run_id)
        if newest is not None:
            return newest
    return int(rows[0][0]), str(rows[0][1])


def run_view(conn: psycopg.Connection[Any], execution_id: int) -> RunView:
    """The run as people see it. A run that continued as new is shown whole, whichever segment
    `execution_id` is: its id the first segment's, its status, output and open gates the last
    one's, its spend and steps all segments' together, and `segments` listing them."""
    cursor = conn.cursor(row_factory=dict_row)
    run = cursor.execute(RUN_SQL, (execution_id,)).fetchone()
    if run is None:
        raise RunNotFoundError(f"no run record for execution {execution_id}")
    logical = None
    if run["segment"] > 1 or run["status"] == "continued":
        logical = logical_run(conn, str(run["logical_run_id"] or run["run_id"]))
    executions = [execution_id]
    first = run
    if logical is not None and len(logical.segments) > 1:
        executions = [s.execution_id for s in logical.segments]
        first = cursor.execute(RUN_SQL, (executions[0],)).fetchone() or run
        run = cursor.execute(RUN_SQL, (executions[-1],)).fetchone() or run
        execution_id = executions[-1]
    tasks = cursor.execute(
        "SELECT t.* FROM task_runs t JOIN unnest(%s::bigint[]) WITH ORDINALITY AS x(id, n)"
        " ON t.execution_id = x.id ORDER BY x.n, t.started_at NULLS LAST, t.step_id, t.item",
        (executions,),
    ).fetchall()
    gates = [_gate(g) for g in cursor.execute(
        "SELECT * FROM gates WHERE execution_arn = %s AND status = 'open' ORDER BY created_at",
        (run["arn"],),
    ).fetchall()]  # fmt: skip
    steps: dict[str, dict[str, Any]] = {}
    for task in tasks:
        step = steps.setdefault(
            task["step_id"],
            {
                "status": task["status"],
                "attempts": 0,
                "output": None,
                "error": None,
                "cost_usd": 0.0,
                "tokens": {"input": 0, "output": 0},
                "started_at": _time(task["started_at"]),
                "ended_at": _time(task["ended_at"]),
            },
        )
        step["cost_usd"] = round(step["cost_usd"] + _number(task["cost_usd"]), 6)
        step["tokens"]["input"] += int(task["input_tokens"])
        step["tokens"]["output"] += int(task["output_tokens"])
        step["attempts"] = max(step["attempts"], int(task["attempts"]))
        if task["item"] == "":
            step.update(status=task["status"], output=task["output"], error=task["error"])
            step["started_at"] = step["started_at"] or _time(task["started_at"])
            step["ended_at"] = _time(task["ended_at"])
        if task["model"]:
            step["model"] = task["model"]
        if task["provider"]:
            step["provider"] = task["provider"]
    links = approve_urls(conn, gates)
    cost, tokens_in, tokens_out = run["cost_usd"], run["input_tokens"], run["output_tokens"]
    if len(executions) > 1 and logical is not None:
        cost, tokens_in = logical.cost_usd, logical.input_tokens
        tokens_out = logical.output_tokens
    data = {
        "run_id": first["run_id"],
        "workflow": run["workflow"],
        "version": run["workflow_version"],
        "status": run["status"],
        "output": run["output"],
        "error": run["error"],
        "cost_usd": round(_number(cost), 6),
        "tokens": {"input": int(tokens_in), "output": int(tokens_out)},
        "steps": steps,
        "waiting_for": [
            {
                "step": gate.step_id,
                "kind": gate.kind,
                "assignee": gate.assignee,
                "message": gate.message,
                "gate_id": gate.id,
                "approve_url": links.get(gate.id),
            }
            for gate in gates
        ],
        "started_at": _time(first["started_at"]),
        "ended_at": _time(run["ended_at"]),
    }
    if len(executions) > 1 and logical is not None:
        data["segments"] = [s.as_json() for s in logical.segments]
    from switchyard.local.reset import reset_fields  # reset acts on runs this module finds

    data.update(reset_fields(conn, str(first["run_id"])))
    return RunView(execution_id, str(run["arn"]), data, gates)


def approve_urls(conn: psycopg.Connection[Any], gates: list[Gate]) -> dict[str, str]:
    """The link of each gate, as its first decider receives it (docs/approvals.md): approve or
    reject an approval or a tool call, resume or cancel a paused run."""
    from switchyard.approvals.service import LinkBook
    from switchyard.approvals.settings import ApprovalSettings

    if not gates:
        return {}
    try:
        book = LinkBook(ApprovalSettings.from_env(conn))
    except ValueError:  # SWITCHYARD_ROLES unreadable: the report still shows the run
        return {}
    links: dict[str, str] = {}
    for gate in gates:
        found = book.links(gate)
        if found:
            links[gate.id] = found[0].url
    return links


def list_runs(
    conn: psycopg.Connection[Any],
    *,
    status: str | None,
    limit: int = 50,
    workflow: str | None = None,
) -> list[dict[str, Any]]:
    """The latest runs first, of one status and/or one workflow when given."""
    where = ["TRUE"]
    params: list[Any] = []
    if status:
        where.append("status = %s")
        params.append(status)
    if workflow:
        where.append("workflow = %s")
        params.append(workflow)
    rows = (
        conn.cursor(row_factory=dict_row)
        .execute(
            # only fixed conditions are joined; the values are parameters
            f"SELECT * FROM workflow_runs WHERE {' AND '.join(where)}"
            " ORDER BY started_at DESC LIMIT %s",
            (*params, limit),
        )
        .fetchall()
    )
    return [listed_run(r) for r in rows]


def listed_run(r: Mapping[str, Any]) -> dict[str, Any]:
    """A `workflow_runs` row as `runs list` and `GET /runs` show it."""
    return {
        "run_id": r["run_id"],
        "workflow": r["workflow"],
        "version": r["workflow_version"],
        "status": r["status"],
        "cost_usd": round(_number(r["cost_usd"]), 6),
        "tokens": {"input": int(r["input_tokens"]), "output": int(r["output_tokens"])},
        "started_at": _time(r["started_at"]),
        "ended_at": _time(r["ended_at"]),
        **segment_fields(r),
    }
