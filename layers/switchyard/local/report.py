"""What a run looks like to people and scripts: `run --json`, `runs show`, live progress.

Built from the run records (workflow_runs, task_runs) and the open gates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import psycopg

from switchyard.gates.model import Gate
from switchyard.gates.store import GateStore
from switchyard.records.segments import logical_run, newest_segment, segment_fields
from switchyard.records.step_status import items_status
from switchyard.records.store import RunStore

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


def find_run(conn: psycopg.Connection[Any], run_id: str) -> tuple[int, str]:
    """(execution id, ARN) of a run named by its id (the execution name) or its ARN."""
    found = RunStore(conn).find(run_id)
    if not found:
        raise RunNotFoundError(f"no run {run_id!r}; `switchyard runs list` shows the runs")
    if len(found) > 1 and not run_id.startswith("arn:"):
        arns = ", ".join(row.arn for row in found)
        raise AmbiguousRunError(f"{run_id!r} names several runs ({arns}); give the ARN")
    if not run_id.startswith("arn:"):  # a run that continued as new: its current segment
        newest = newest_segment(conn, run_id)
        if newest is not None:
            return newest
    return found[0].execution_id, found[0].arn


def run_view(conn: psycopg.Connection[Any], execution_id: int) -> RunView:
    """The run as people see it. A run that continued as new is shown whole, whichever segment
    `execution_id` is: its id the first segment's, its status, output and open gates the last
    one's, its spend and steps all segments' together, and `segments` listing them.

    Read from one snapshot when `conn` is in autocommit (a command following a run): its
    several statements would otherwise each see a later moment, and a run that ended between
    two of them would show as failed with its last segment still running. The gates' links are
    made after it (making one may write the signing key)."""
    if not conn.autocommit:
        view = _run_view(conn, execution_id)
    else:
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            view = _run_view(conn, execution_id)
    links = approve_urls(conn, view.gates)
    for waiting in view.data["waiting_for"]:
        waiting["approve_url"] = links.get(waiting["gate_id"])
    return view


def _run_view(conn: psycopg.Connection[Any], execution_id: int) -> RunView:
    runs = RunStore(conn)
    run = runs.run(execution_id)
    if run is None:
        raise RunNotFoundError(f"no run record for execution {execution_id}")
    logical = None
    if run.segment > 1 or run.status == "continued":
        logical = logical_run(conn, run.logical_run_id or run.run_id)
    executions = [execution_id]
    first = run
    if logical is not None and len(logical.segments) > 1:
        executions = [s.execution_id for s in logical.segments]
        first = runs.run(executions[0]) or run
        run = runs.run(executions[-1]) or run
        execution_id = executions[-1]
    gates = GateStore.on(conn).open_of_execution(run.arn)
    steps: dict[str, dict[str, Any]] = {}
    recorded: set[str] = set()
    for task in runs.tasks_of(executions):
        step = steps.setdefault(
            task.step_id,
            {
                "status": task.status,
                "attempts": 0,
                "output": None,
                "error": None,
                "cost_usd": 0.0,
                "tokens": {"input": 0, "output": 0},
                "started_at": _time(task.started_at),
                "ended_at": _time(task.ended_at),
            },
        )
        step["cost_usd"] = round(step["cost_usd"] + _number(task.cost_usd), 6)
        step["tokens"]["input"] += int(task.input_tokens)
        step["tokens"]["output"] += int(task.output_tokens)
        step["attempts"] = max(step["attempts"], int(task.attempts))
        if task.item == "":
            step.update(status=task.status, output=task.output, error=task.error)
            recorded.add(task.step_id)
        elif task.step_id not in recorded:  # only items so far: the step is as its items are
            step["status"] = items_status((step["status"], task.status))
            step["error"] = step["error"] or task.error
            step["started_at"] = step["started_at"] or _time(task.started_at)
            step["ended_at"] = _time(task.ended_at)
        if task.replayed_from:  # the step, or its map items or loop iterations
            step["replayed_from"] = task.replayed_from
        if task.model:
            step["model"] = task.model
        if task.provider:
            step["provider"] = task.provider
    cost, tokens_in, tokens_out = run.cost_usd, run.input_tokens, run.output_tokens
    if len(executions) > 1 and logical is not None:
        cost, tokens_in = logical.cost_usd, logical.input_tokens
        tokens_out = logical.output_tokens
    data = {
        "run_id": first.run_id,
        "workflow": run.workflow,
        "version": run.workflow_version,
        "status": run.status,
        "output": run.output,
        "error": run.error,
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
                "approve_url": None,  # `run_view` makes the links
            }
            for gate in gates
        ],
        "started_at": _time(first.started_at),
        "ended_at": _time(run.ended_at),
    }
    if len(executions) > 1 and logical is not None:
        data["segments"] = [s.as_json() for s in logical.segments]
    from switchyard.local.reset import reset_fields  # reset acts on runs this module finds

    data.update(reset_fields(conn, first.run_id))
    return RunView(execution_id, run.arn, data, gates)


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
    rows = RunStore(conn).runs(status=status, workflow=workflow, limit=limit)
    return [listed_run(vars(row)) for row in rows]


def listed_run(r: Mapping[str, Any]) -> dict[str, Any]:
    """A `workflow_runs` row (`RunRow`'s fields) as `runs list` and `GET /runs` show it."""
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
