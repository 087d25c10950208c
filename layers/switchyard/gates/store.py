"""Gates in PostgreSQL (`gates`, migration 0003): the one module that writes them.

The run records close a row too (the engine in the transaction that ends its task, the recorder
on AWS from the history), when no decision path claimed it first
(`switchyard.records.gate_records`: an answer through SendTaskSuccess/SendTaskFailure, a tier that
timed out, a task cancelled)."""

from __future__ import annotations

from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from switchyard.gates.model import Gate, GateStatus

TIMED_OUT = "timed_out"
"""The decision of a tier nobody decided in time (reviewer `timeout`; set by the engine)."""
SUPERSEDE_SQL = (
    "UPDATE gates SET status = 'superseded' WHERE execution_arn = %s AND step_id = %s"
    " AND (status = 'open' OR (status = 'decided' AND decision = 'timed_out'))"
)
"""A new opening (the next tier, or the step waiting again) replaces the open gate, and the
tier that timed out before it."""


class GateStore:
    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def open(self, gate: Gate) -> None:
        """Record an open gate; an open gate of the same step of the run is superseded (an
        escalation's next tier, or the step waiting again)."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(SUPERSEDE_SQL, (gate.execution_arn, gate.step_id))
            conn.execute(
                "INSERT INTO gates (id, run_id, execution_arn, workflow, version, step_id, kind,"
                " tier, assignee, channels, message, show, allow_edit, request, token, status,"
                " deadline, notified) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                " %s, %s, 'open', %s, %s)",
                (
                    gate.id, gate.run_id, gate.execution_arn, gate.workflow, gate.version,
                    gate.step_id, gate.kind, gate.tier, gate.assignee, gate.channels, gate.message,
                    Jsonb(gate.show) if gate.show is not None else None, gate.allow_edit,
                    Jsonb(gate.request) if gate.request is not None else None, gate.token,
                    gate.deadline, Jsonb(gate.notified),
                ),
            )  # fmt: skip

    def set_notified(self, gate: Gate) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE gates SET notified = %s WHERE id = %s", (Jsonb(gate.notified), gate.id)
            )

    def get(self, gate_id: str) -> Gate | None:
        return self._one("SELECT * FROM gates WHERE id = %s", (gate_id,))

    def open_for(self, run_id: str, step_id: str | None = None) -> list[Gate]:
        if step_id is None:
            return self._many(
                "SELECT * FROM gates WHERE run_id = %s AND status = 'open' ORDER BY created_at",
                (run_id,),
            )
        return self._many(
            "SELECT * FROM gates WHERE run_id = %s AND step_id = %s AND status = 'open'"
            " ORDER BY created_at",
            (run_id, step_id),
        )

    def open_gates(self, limit: int = 200) -> list[Gate]:
        return self._many(
            "SELECT * FROM gates WHERE status = 'open' ORDER BY created_at LIMIT %s", (limit,)
        )

    def by_execution(self, execution_arn: str) -> list[Gate]:
        return self._many(
            "SELECT * FROM gates WHERE execution_arn = %s ORDER BY created_at", (execution_arn,)
        )

    def close(self, gate: Gate) -> bool:
        """Record the decision; False when the gate was no longer open (decided elsewhere)."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "UPDATE gates SET status = 'decided', decision = %s, reviewer = %s, note = %s,"
                " edits = %s, decided_at = now() WHERE id = %s AND status = 'open' RETURNING id",
                (
                    gate.decision,
                    gate.reviewer,
                    gate.note,
                    Jsonb(gate.edits) if gate.edits is not None else None,
                    gate.id,
                ),
            ).fetchone()
        return row is not None

    def cancel_open(self, execution_arn: str, *, reviewer: str | None, note: str) -> int:
        """The run was stopped: its open gates are closed as decided `cancel` (their task tokens
        died with it), so no one is left asked to decide them; how many were."""
        with self._pool.connection() as conn:
            return conn.execute(
                "UPDATE gates SET status = 'decided', decision = 'cancel', reviewer = %s,"
                " note = %s, decided_at = now() WHERE execution_arn = %s AND status = 'open'",
                (reviewer, note, execution_arn),
            ).rowcount

    def close_gone(self, gate: Gate) -> None:
        """A claimed decision the run could not hear: its task no longer waits. The gate is
        closed, not reopened: nobody can decide it any more."""
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE gates SET status = 'closed', decision = NULL, reviewer = NULL,"
                " note = 'the run no longer waited for this decision', edits = NULL"
                " WHERE id = %s AND status = 'decided'",
                (gate.id,),
            )

    def reopen(self, gate: Gate) -> None:
        """Undo a claim whose decision could not be delivered."""
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE gates SET status = 'open', decision = NULL, reviewer = NULL, note = NULL,"
                " edits = NULL, decided_at = NULL WHERE id = %s AND status = 'decided'",
                (gate.id,),
            )

    def _one(self, query: str, params: tuple[Any, ...]) -> Gate | None:
        gates = self._many(query, params)
        return gates[0] if gates else None

    def _many(self, query: str, params: tuple[Any, ...]) -> list[Gate]:
        with self._pool.connection() as conn:
            rows = conn.cursor(row_factory=dict_row).execute(query, params).fetchall()
        return [_gate(row) for row in rows]


def _gate(row: dict[str, Any]) -> Gate:
    return Gate(
        id=row["id"],
        run_id=row["run_id"],
        execution_arn=row["execution_arn"],
        workflow=row["workflow"],
        version=row["version"],
        step_id=row["step_id"],
        kind=row["kind"],
        tier=row["tier"],
        assignee=row["assignee"],
        channels=list(row["channels"] or []),
        message=row["message"],
        show=row["show"],
        allow_edit=row["allow_edit"],
        request=row["request"],
        token=row["token"],
        status=GateStatus(row["status"]),
        deadline=row["deadline"],
        decision=row["decision"],
        reviewer=row["reviewer"],
        note=row["note"],
        edits=row["edits"],
        notified=list(row["notified"] or []),
        created_at=row["created_at"],
        decided_at=row["decided_at"],
    )
