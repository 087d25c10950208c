"""The runs list: newest first, filtered by status, workflow, time range and run id, one keyset
page at a time (the cursor is the last row's `(started_at, execution_id)`, so page 2,000 costs
what page 1 does). On a local engine's database each row says whether the run is stuck (`stuck`,
null when it is not, and always on AWS)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import psycopg

from switchyard.constants import DEFAULT_STUCK_AFTER_SECONDS
from switchyard.dashboard.errors import BadQueryError
from switchyard.local.report import RUN_STATUSES
from switchyard.local.stuck import OPEN_STATUSES, StuckAfterError, stuck_after, stuck_runs
from switchyard.records.reports import RunReports
from switchyard.records.segments import segment_fields

MAX_PAGE = 200
MAX_SEARCH = 80


@dataclass(frozen=True)
class RunFilter:
    status: str | None = None
    workflow: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    search: str | None = None
    """A run id, or the start of one."""
    cursor: str | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in RUN_STATUSES:
            raise BadQueryError(
                f"status must be one of {', '.join(RUN_STATUSES)}, not {self.status!r}"
            )
        if not 1 <= self.limit <= MAX_PAGE:
            raise BadQueryError(f"limit must be from 1 to {MAX_PAGE}, not {self.limit}")
        if self.search is not None and len(self.search) > MAX_SEARCH:
            raise BadQueryError(f"a run id has at most {MAX_SEARCH} characters")


def encode_cursor(started_at: datetime, execution_id: int) -> str:
    text = f"{started_at.astimezone(UTC).isoformat()}|{execution_id}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, _, execution = base64.urlsafe_b64decode(padded).decode().partition("|")
        return datetime.fromisoformat(stamp), int(execution)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise BadQueryError(
            "the cursor is not one this server gave out: start again from the first page"
        ) from None


def runs_page(
    conn: psycopg.Connection[Any], query: RunFilter, *, stuck: bool = False
) -> dict[str, Any]:
    """A page of runs; with `stuck` (a local engine's database), each open run's row says
    whether it is stuck."""
    rows = RunReports(conn).runs_page(
        limit=query.limit + 1,
        status=query.status,
        workflow=query.workflow,
        since=query.since,
        until=query.until,
        run_id_prefix=query.search,
        before=decode_cursor(query.cursor) if query.cursor else None,
    )
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    last = rows[-1] if rows else None
    opened = [row["execution_id"] for row in rows if row["status"] in OPEN_STATUSES]
    found = _stuck(conn, opened) if stuck else {}
    return {
        "runs": [{**run_row(row), "stuck": found.get(row["execution_id"])} for row in rows],
        "next": encode_cursor(last["started_at"], last["execution_id"]) if more and last else None,
    }


def _stuck(conn: psycopg.Connection[Any], execution_ids: list[int]) -> dict[int, Any]:
    """The page's stuck runs (docs/runbooks.md#stuck-runs): execution id -> since when and on
    what they wait; the server's SWITCHYARD_STUCK_AFTER, or its default when that is unreadable
    (`runs list --stuck` says what is wrong with it)."""
    if not execution_ids:
        return {}
    try:
        after = stuck_after()
    except StuckAfterError:
        after = DEFAULT_STUCK_AFTER_SECONDS
    found = stuck_runs(conn, after_seconds=after, execution_ids=execution_ids)
    return {run.execution_id: run.to_json()["stuck"] for run in found}


def _number(value: Any) -> float:
    return float(value) if isinstance(value, Decimal | int | float) else 0.0


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def run_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "workflow": row["workflow"],
        "version": row["workflow_version"],
        "tenant": row["tenant"],
        "status": row["status"],
        "cost_usd": round(_number(row["cost_usd"]), 6),
        "tokens": {"input": int(row["input_tokens"]), "output": int(row["output_tokens"])},
        "started_at": iso(row["started_at"]),
        "ended_at": iso(row["ended_at"]),
        "waiting_on": row.get("waiting_on") or [],
        "child": row["parent_execution_id"] is not None,
        **segment_fields(row),
    }
