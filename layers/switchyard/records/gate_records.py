"""Gate rows as a run's tasks end (the engine, in the transaction that ends them; the recorder on
AWS, from the execution's history): whichever port
answered (SendTaskSuccess/SendTaskFailure from the Step Functions API, the engine's command
queue), the row records the answer unless a decision path (`switchyard.gates.decide`) claimed it
first; a tier that ran out of time is decided by the timeout; a cancelled task closes its gate.

The rows belong to `switchyard.gates.store`; the run records write only these closing updates,
here rather than through that package so that the engine does not import the step runtime."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

TIMED_OUT = "timed_out"
"""The same as `switchyard.gates.store.TIMED_OUT`."""

ANSWER_SQL = (
    "UPDATE gates SET status = 'decided', decision = %s, reviewer = %s, note = %s, edits = %s,"
    " decided_at = now() WHERE token = %s AND status = 'open'"
)
REVOKED_SQL = (
    "UPDATE gates SET status = %s, decision = %s, reviewer = %s, note = %s, decided_at = now()"
    " WHERE token = ANY(%s) AND status = 'open'"
)


def record_answer(
    conn: psycopg.Connection[Any],
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


def record_revoked(conn: psycopg.Connection[Any], tokens: list[str], *, timed_out: bool) -> None:
    """Tasks that ended without an answer: a tier that ran out of time is decided by the timeout
    (the next tier, or `on_timeout`, follows); a task cancelled closes its gate."""
    if not tokens:
        return
    params: tuple[str, str | None, str | None, str]
    if timed_out:
        params = ("decided", TIMED_OUT, "timeout", "nobody decided in time")
    else:
        params = ("closed", None, None, "the step was cancelled")
    conn.execute(REVOKED_SQL, (*params, tokens))
