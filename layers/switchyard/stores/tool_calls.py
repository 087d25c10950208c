"""Per-run state of tool policy: which calls were made, and what people decided about them.

`ToolCallLedger.register` counts a call once by its id (a retried attempt making the same call is
not a second call), and answers two questions atomically: how many calls of this tool the run has
made (`max_calls_per_run`), and how many of them had exactly these arguments (loop detection).
`DecisionStore` holds a person's answer to a `human_required` call (approve with exactly these
arguments, or reject), which the step picks up when it runs again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool


@dataclass(frozen=True, slots=True)
class CallCounts:
    tool_calls: int
    """Calls of this tool in the run, this one included."""
    same_arguments: int
    """Calls of this tool with these arguments in the run, this one included."""


class ToolCallLedger(Protocol):
    def register(self, run_id: str, call_id: str, tool: str, args_hash: str) -> CallCounts: ...


class InMemoryToolCallLedger:
    def __init__(self) -> None:
        self._calls: dict[tuple[str, str], tuple[str, str]] = {}
        self._lock = threading.Lock()

    def register(self, run_id: str, call_id: str, tool: str, args_hash: str) -> CallCounts:
        with self._lock:
            self._calls.setdefault((run_id, call_id), (tool, args_hash))
            mine = [v for (run, _), v in self._calls.items() if run == run_id and v[0] == tool]
            return CallCounts(len(mine), sum(1 for _, h in mine if h == args_hash))


class PostgresToolCallLedger:
    """Table `tool_calls`; an advisory lock per run and tool serialises count-then-check."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def register(self, run_id: str, call_id: str, tool: str, args_hash: str) -> CallCounts:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{run_id}/{tool}",))
            conn.execute(
                "INSERT INTO tool_calls (run_id, call_id, tool, args_hash) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (run_id, call_id) DO NOTHING",
                (run_id, call_id, tool, args_hash),
            )
            row = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE args_hash = %s)"
                " FROM tool_calls WHERE run_id = %s AND tool = %s",
                (args_hash, run_id, tool),
            ).fetchone()
        assert row is not None
        return CallCounts(int(row[0]), int(row[1]))


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """A person's answer about one tool call."""

    decision: Literal["approved", "rejected"]
    args: dict[str, Any] | None = None
    """The arguments approved (possibly edited); None: as requested."""
    output: Any = None
    """For an unknown outcome: the call did take effect, and this is its result."""
    reviewer: str | None = None
    note: str | None = None
    shown_args: dict[str, Any] | None = None
    """The arguments the person was shown (redacted): the decision applies to a call with
    these arguments only; None: to the call, whatever its arguments (decisions made before)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "args": self.args,
            "output": self.output,
            "reviewer": self.reviewer,
            "note": self.note,
            "shown_args": self.shown_args,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolDecision:
        return cls(
            decision=data["decision"],
            args=data.get("args"),
            output=data.get("output"),
            reviewer=data.get("reviewer"),
            note=data.get("note"),
            shown_args=data.get("shown_args"),
        )


class DecisionStore(Protocol):
    def get(self, run_id: str, call_id: str) -> ToolDecision | None: ...

    def record(self, run_id: str, call_id: str, decision: ToolDecision) -> None: ...


class InMemoryDecisionStore:
    def __init__(self) -> None:
        self._decisions: dict[tuple[str, str], ToolDecision] = {}
        self._lock = threading.Lock()

    def get(self, run_id: str, call_id: str) -> ToolDecision | None:
        with self._lock:
            return self._decisions.get((run_id, call_id))

    def record(self, run_id: str, call_id: str, decision: ToolDecision) -> None:
        with self._lock:
            self._decisions[(run_id, call_id)] = decision


class PostgresDecisionStore:
    """Table `tool_decisions`; a later decision for the same call replaces the earlier one."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def get(self, run_id: str, call_id: str) -> ToolDecision | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT decision FROM tool_decisions WHERE run_id = %s AND call_id = %s",
                (run_id, call_id),
            ).fetchone()
        return ToolDecision.from_json(row[0]) if row else None

    def record(self, run_id: str, call_id: str, decision: ToolDecision) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO tool_decisions (run_id, call_id, decision) VALUES (%s, %s, %s)"
                " ON CONFLICT (run_id, call_id) DO UPDATE SET decision = EXCLUDED.decision",
                (run_id, call_id, Jsonb(decision.to_json())),
            )
