"""The audit log of tool calls: who called what, with which arguments, and how it ended.

Every call the tool gateway sees is written here, refused ones included, with secrets redacted.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

REDACTED = "***"
_SECRET_NAME = re.compile(
    r"secret|passw|token|api[_-]?key|authorization|cookie|credential|webhook|private[_-]?key",
    re.IGNORECASE,
)


def redact(value: Any) -> Any:
    """`value` with the values of secret-looking keys replaced (recursively)."""
    if isinstance(value, dict):
        return {
            key: REDACTED if _SECRET_NAME.search(str(key)) else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def unredact(edited: Any, original: Any) -> Any:
    """`edited` (arguments a person wrote over the redacted ones they were shown) with every
    `***` under a secret-looking key put back from `original`, the real arguments: approving a
    call, with or without edits, never replaces a secret with `***`. A secret the person left
    out stays out, and one they wrote anew is taken as written."""
    if isinstance(edited, dict) and isinstance(original, dict):
        return {
            key: original[key]
            if item == REDACTED and key in original and _SECRET_NAME.search(str(key))
            else unredact(item, original.get(key))
            for key, item in edited.items()
        }
    if isinstance(edited, list) and isinstance(original, list):
        return [
            unredact(item, original[n] if n < len(original) else None)
            for n, item in enumerate(edited)
        ]
    return edited


@dataclass(frozen=True, slots=True)
class AuditRecord:
    run_id: str
    step_id: str
    tool: str
    call_id: str
    arguments: dict[str, Any]
    """Already redacted."""
    outcome: str
    """ok, error, refused (a `policy` refusal), human_required, rejected."""
    duration_ms: float
    error_type: str | None = None
    message: str | None = None
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


class AuditLog(Protocol):
    def write(self, record: AuditRecord) -> None: ...

    def for_run(self, run_id: str) -> list[AuditRecord]: ...


class InMemoryAuditLog:
    def __init__(self) -> None:
        self.records: list[AuditRecord] = []
        self._lock = threading.Lock()

    def write(self, record: AuditRecord) -> None:
        with self._lock:
            self.records.append(record)

    def for_run(self, run_id: str) -> list[AuditRecord]:
        with self._lock:
            return [r for r in self.records if r.run_id == run_id]


class PostgresAuditLog:
    """Table `tool_audit`, append-only."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def write(self, record: AuditRecord) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO tool_audit (at, run_id, step_id, tool, call_id, arguments, outcome,"
                " error_type, message, duration_ms)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    record.at,
                    record.run_id,
                    record.step_id,
                    record.tool,
                    record.call_id,
                    Jsonb(record.arguments),
                    record.outcome,
                    record.error_type,
                    record.message,
                    record.duration_ms,
                ),
            )

    def for_run(self, run_id: str) -> list[AuditRecord]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT run_id, step_id, tool, call_id, arguments, outcome, duration_ms,"
                " error_type, message, at FROM tool_audit WHERE run_id = %s ORDER BY id",
                (run_id,),
            ).fetchall()
        return [
            AuditRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]) for r in rows
        ]
