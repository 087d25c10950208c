"""Gates in PostgreSQL (`gates`, migration 0003): the one module with SQL that writes them.

Most callers hold a pool (`GateStore(pool)`: each call borrows a connection). The run records
close rows too, in the transaction that ends a task (the engine's) or records its history (the
recorder on AWS), through `GateStore.on(conn)`: an answer through SendTaskSuccess/SendTaskFailure,
a tier that timed out, a task cancelled, a run that ended with gates open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from switchyard.gates.model import Gate, GateStatus

TIMED_OUT = "timed_out"
"""The decision of a tier nobody decided in time (reviewer `timeout`; set by the engine)."""

SUPERSEDE_SQL = """
UPDATE gates SET status = 'superseded'
 WHERE execution_arn = %s AND step_id = %s
   AND (status = 'open' OR (status = 'decided' AND decision = 'timed_out'))
"""
"""A new opening (the next tier, or the step waiting again) replaces the open gate, and the
tier that timed out before it."""
INSERT_SQL = """
INSERT INTO gates (id, run_id, execution_arn, workflow, version, step_id, kind, tier, assignee,
                   channels, message, show, allow_edit, request, token, status, deadline,
                   notified)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'open', %s, %s)
"""
NOTIFIED_SQL = "UPDATE gates SET notified = %s WHERE id = %s"
GATE_SQL = "SELECT * FROM gates WHERE id = %s"
OPEN_OF_RUN_SQL = "SELECT * FROM gates WHERE run_id = %s AND status = 'open' ORDER BY created_at"
OPEN_OF_STEP_SQL = """
SELECT * FROM gates WHERE run_id = %s AND step_id = %s AND status = 'open' ORDER BY created_at
"""
OPEN_SQL = "SELECT * FROM gates WHERE status = 'open' ORDER BY created_at LIMIT %s"
OF_EXECUTION_SQL = "SELECT * FROM gates WHERE execution_arn = %s ORDER BY created_at"
OPEN_OF_EXECUTION_SQL = """
SELECT * FROM gates WHERE execution_arn = %s AND status = 'open' ORDER BY created_at
"""
WAITING_RUNS_SQL = """
SELECT DISTINCT execution_arn, workflow FROM gates WHERE run_id = %s AND status = 'open'
"""
"""The runs of an id that wait at a gate (the open-gates index)."""
WORKFLOW_SQL = "SELECT workflow FROM gates WHERE execution_arn = %s LIMIT 1"
DECIDE_SQL = """
UPDATE gates SET status = 'decided', decision = %s, reviewer = %s, note = %s, edits = %s,
       decided_at = now()
 WHERE id = %s AND status = 'open'
RETURNING id
"""
CANCEL_OPEN_SQL = """
UPDATE gates SET status = 'decided', decision = 'cancel', reviewer = %s, note = %s,
       decided_at = now()
 WHERE execution_arn = %s AND status = 'open'
"""
CLOSE_GONE_SQL = """
UPDATE gates SET status = 'closed', decision = NULL, reviewer = NULL,
       note = 'the run no longer waited for this decision', edits = NULL
 WHERE id = %s AND status = 'decided'
"""
REOPEN_SQL = """
UPDATE gates SET status = 'open', decision = NULL, reviewer = NULL, note = NULL, edits = NULL,
       decided_at = NULL
 WHERE id = %s AND status = 'decided'
"""
ANSWER_SQL = """
UPDATE gates SET status = 'decided', decision = %s, reviewer = %s, note = %s, edits = %s,
       decided_at = now()
 WHERE token = %s AND status = 'open'
"""
REVOKED_SQL = """
UPDATE gates SET status = %s, decision = %s, reviewer = %s, note = %s, decided_at = now()
 WHERE token = ANY(%s) AND status = 'open'
"""
CLOSE_OPEN_SQL = """
UPDATE gates SET status = 'closed', decided_at = now(), note = %s
 WHERE execution_arn = %s AND status = 'open'
"""


@dataclass(frozen=True)
class WaitingRun:
    """A run that waits at an open gate, as the gates know it."""

    execution_arn: str
    workflow: str


class GateStore:
    def __init__(self, pool: ConnectionPool | None, *, conn: psycopg.Connection[Any] | None = None):
        self._pool = pool
        self._conn = conn

    @classmethod
    def on(cls, conn: psycopg.Connection[Any]) -> GateStore:
        """The store on one connection, in its caller's transaction."""
        return cls(None, conn=conn)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self._conn is not None:
            yield self._conn
            return
        assert self._pool is not None
        with self._pool.connection() as conn:
            yield conn

    def open(self, gate: Gate) -> None:
        """Record an open gate; an open gate of the same step of the run is superseded (an
        escalation's next tier, or the step waiting again)."""
        with self._connection() as conn, conn.transaction():
            conn.execute(SUPERSEDE_SQL, (gate.execution_arn, gate.step_id))
            conn.execute(
                INSERT_SQL,
                (
                    gate.id, gate.run_id, gate.execution_arn, gate.workflow, gate.version,
                    gate.step_id, gate.kind, gate.tier, gate.assignee, gate.channels, gate.message,
                    Jsonb(gate.show) if gate.show is not None else None, gate.allow_edit,
                    Jsonb(gate.request) if gate.request is not None else None, gate.token,
                    gate.deadline, Jsonb(gate.notified),
                ),
            )  # fmt: skip

    def set_notified(self, gate: Gate) -> None:
        with self._connection() as conn:
            conn.execute(NOTIFIED_SQL, (Jsonb(gate.notified), gate.id))

    def get(self, gate_id: str) -> Gate | None:
        return self._one(GATE_SQL, (gate_id,))

    def open_for(self, run_id: str, step_id: str | None = None) -> list[Gate]:
        if step_id is None:
            return self._many(OPEN_OF_RUN_SQL, (run_id,))
        return self._many(OPEN_OF_STEP_SQL, (run_id, step_id))

    def open_gates(self, limit: int = 200) -> list[Gate]:
        return self._many(OPEN_SQL, (limit,))

    def by_execution(self, execution_arn: str) -> list[Gate]:
        return self._many(OF_EXECUTION_SQL, (execution_arn,))

    def open_of_execution(self, execution_arn: str) -> list[Gate]:
        return self._many(OPEN_OF_EXECUTION_SQL, (execution_arn,))

    def waiting_runs(self, run_id: str) -> list[WaitingRun]:
        """The runs of this id that wait at an open gate."""
        with self._connection() as conn:
            rows = conn.execute(WAITING_RUNS_SQL, (run_id,)).fetchall()
        return [WaitingRun(str(arn), str(workflow)) for arn, workflow in rows]

    def workflow_of(self, execution_arn: str) -> str | None:
        """The workflow of a run that ever opened a gate."""
        with self._connection() as conn:
            row = conn.execute(WORKFLOW_SQL, (execution_arn,)).fetchone()
        return str(row[0]) if row else None

    def close(self, gate: Gate) -> bool:
        """Record the decision; False when the gate was no longer open (decided elsewhere)."""
        edits = Jsonb(gate.edits) if gate.edits is not None else None
        with self._connection() as conn:
            row = conn.execute(
                DECIDE_SQL, (gate.decision, gate.reviewer, gate.note, edits, gate.id)
            ).fetchone()
        return row is not None

    def cancel_open(self, execution_arn: str, *, reviewer: str | None, note: str) -> int:
        """The run was stopped: its open gates are closed as decided `cancel` (their task tokens
        died with it), so no one is left asked to decide them; how many were."""
        with self._connection() as conn:
            return conn.execute(CANCEL_OPEN_SQL, (reviewer, note, execution_arn)).rowcount

    def close_gone(self, gate: Gate) -> None:
        """A claimed decision the run could not hear: its task no longer waits. The gate is
        closed, not reopened: nobody can decide it any more."""
        with self._connection() as conn:
            conn.execute(CLOSE_GONE_SQL, (gate.id,))

    def reopen(self, gate: Gate) -> None:
        """Undo a claim whose decision could not be delivered."""
        with self._connection() as conn:
            conn.execute(REOPEN_SQL, (gate.id,))

    # --- what the run records close ------------------------------------------------------------

    def record_answer(
        self,
        token: str,
        *,
        ok: bool,
        output: Any = None,
        error: str | None = None,
        cause: str | None = None,
    ) -> None:
        """The task of `token` got its answer through the task-token API: its gate row, if still
        open (no decision path claimed it first), records what was sent."""
        answer = output if isinstance(output, dict) else {}
        if not ok:
            try:
                answer = json.loads(cause or "")
            except ValueError:
                answer = {"note": cause or None}
            answer = answer if isinstance(answer, dict) else {}
        decision = answer.get("decision") if ok else (error or "failed")
        if ok and decision is None:
            decision = "resume" if answer.get("resumed") else "succeeded"
        reviewer, note, edits = answer.get("reviewer"), answer.get("note"), answer.get("edits")
        with self._connection() as conn:
            conn.execute(
                ANSWER_SQL,
                (
                    str(decision)[:200],
                    str(reviewer)[:200] if reviewer is not None else None,
                    str(note)[:4000] if note is not None else "sent through the task-token API",
                    Jsonb(edits) if isinstance(edits, dict) and edits else None,
                    token,
                ),
            )

    def record_revoked(self, tokens: list[str], *, timed_out: bool) -> None:
        """Tasks that ended without an answer: a tier that ran out of time is decided by the
        timeout (the next tier, or `on_timeout`, follows); a task cancelled closes its gate."""
        if not tokens:
            return
        params: tuple[str, str | None, str | None, str]
        if timed_out:
            params = ("decided", TIMED_OUT, "timeout", "nobody decided in time")
        else:
            params = ("closed", None, None, "the step was cancelled")
        with self._connection() as conn:
            conn.execute(REVOKED_SQL, (*params, tokens))

    def close_open(self, execution_arn: str, *, note: str) -> None:
        """The run ended with gates open (a branch waiting when another failed, a cancel): they
        are closed, so no one is left asked to decide them."""
        with self._connection() as conn:
            conn.execute(CLOSE_OPEN_SQL, (note, execution_arn))

    def _one(self, query: str, params: tuple[Any, ...]) -> Gate | None:
        gates = self._many(query, params)
        return gates[0] if gates else None

    def _many(self, query: str, params: tuple[Any, ...]) -> list[Gate]:
        with self._connection() as conn:
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
