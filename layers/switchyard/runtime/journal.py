"""The agent's turn journal: model turns that asked for tools, and those tools' results.

An agent step can stop half-way: a tool call waits for approval, a tool is rate limited, the Lambda
dies. When the step runs again it replays the journal instead of asking the model afresh, so the
call a person approved is the call that runs (a fresh answer could differ), finished tools are not
run twice, and tokens are not paid twice. Only turns that asked for tools are kept: a final answer
that failed (say, invalid JSON) is asked for again on the next attempt.

A turn is `reported` once a failed attempt has reported its cost (in its error's cause): the
attempt that replays it does not count it again. A turn paid for by an attempt that could not
report (the process died) is counted by the attempt that replays it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool


class TurnJournal(Protocol):
    def turns(self, step_key: str) -> dict[int, dict[str, Any]]:
        """Turn number -> `{"response": ..., "results": {tool_use_id: result}}`."""
        ...

    def put_turn(self, step_key: str, turn: int, response: dict[str, Any]) -> None: ...

    def put_result(self, step_key: str, turn: int, tool_use_id: str, result: Any) -> None: ...

    def mark_reported(self, step_key: str, turns: Sequence[int]) -> None:
        """The cost of these turns has been reported by the attempt that paid for them."""
        ...


class InMemoryTurnJournal:
    def __init__(self) -> None:
        self._entries: dict[str, dict[int, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def turns(self, step_key: str) -> dict[int, dict[str, Any]]:
        with self._lock:
            return {
                turn: {**e, "results": dict(e["results"])}
                for turn, e in self._entries.get(step_key, {}).items()
            }

    def put_turn(self, step_key: str, turn: int, response: dict[str, Any]) -> None:
        with self._lock:
            self._entries.setdefault(step_key, {}).setdefault(
                turn, {"response": response, "results": {}}
            )

    def put_result(self, step_key: str, turn: int, tool_use_id: str, result: Any) -> None:
        with self._lock:
            self._entries[step_key][turn]["results"][tool_use_id] = result

    def mark_reported(self, step_key: str, turns: Sequence[int]) -> None:
        with self._lock:
            for turn in turns:
                entry = self._entries.get(step_key, {}).get(turn)
                if entry is not None:
                    entry["reported"] = True


class PostgresTurnJournal:
    """Table `agent_turns`."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def turns(self, step_key: str) -> dict[int, dict[str, Any]]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT turn, entry FROM agent_turns WHERE step_key = %s", (step_key,)
            ).fetchall()
        return {int(turn): entry for turn, entry in rows}

    def put_turn(self, step_key: str, turn: int, response: dict[str, Any]) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO agent_turns (step_key, turn, entry) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (step_key, turn, Jsonb({"response": response, "results": {}})),
            )

    def put_result(self, step_key: str, turn: int, tool_use_id: str, result: Any) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE agent_turns SET entry = jsonb_set(entry, ARRAY['results', %s], %s)"
                " WHERE step_key = %s AND turn = %s",
                (tool_use_id, Jsonb(result), step_key, turn),
            )

    def mark_reported(self, step_key: str, turns: Sequence[int]) -> None:
        if not turns:
            return
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE agent_turns SET entry = entry || %s WHERE step_key = %s AND turn = ANY(%s)",
                (Jsonb({"reported": True}), step_key, list(turns)),
            )
