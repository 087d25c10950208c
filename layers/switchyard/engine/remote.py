"""Commands for the engine from another process, through PostgreSQL.

The CLI may find an engine already running for its database (in the background, or in
`switchyard dev`). It then inserts a row in `engine_commands` and NOTIFYs; the engine's listener
takes pending rows, runs them through its coordinator, and writes each result back. Task tokens
travel only inside the database.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from switchyard.engine import errors
from switchyard.engine.commands import (
    Callback,
    CallbackKind,
    Command,
    RedriveExecution,
    StartExecution,
    StopExecution,
)
from switchyard.engine.outage import Backoff, Outage

log = logging.getLogger(__name__)
CHANNEL = "switchyard_commands"
DONE_CHANNEL = "switchyard_commands_done"


_CALLBACKS: dict[str, CallbackKind] = {
    "task_success": "success",
    "task_failure": "failure",
    "task_heartbeat": "heartbeat",
}


def to_command(kind: str, payload: dict[str, Any]) -> Command:
    if kind == "start":
        return StartExecution(
            payload["machine_arn"], payload.get("name") or "", payload.get("input"),
            options=payload.get("options") or {},
        )  # fmt: skip
    if kind == "stop":
        return StopExecution(payload["arn"], payload.get("error"), payload.get("cause"))
    if kind == "redrive":
        return RedriveExecution(payload["arn"])
    if kind in _CALLBACKS:
        return Callback(
            payload["token"],
            _CALLBACKS[kind],
            output=payload.get("output"),
            error=payload.get("error", ""),
            cause=payload.get("cause", ""),
        )
    raise ValueError(f"unknown command {kind}")


def _plain(value: Any) -> Any:
    return json.loads(
        json.dumps(value, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))
    )


class CommandListener:
    """Runs in the engine process: takes commands from the table and submits them."""

    def __init__(self, conninfo: str, submit: Any) -> None:
        self._conninfo = conninfo
        self._submit = submit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="switchyard-commands", daemon=True)

    def start(self) -> None:
        """Take back the commands a dead engine had taken and not answered (starts are idempotent
        by name, callbacks by token: doing one again is safe), then listen."""
        with psycopg.connect(self._conninfo, autocommit=True) as conn:
            conn.execute("UPDATE engine_commands SET status = 'pending' WHERE status = 'taken'")
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # a process closed while still waiting for the lock
            self._thread.join(timeout=5)  # never started its listener

    def _run(self) -> None:
        outage = Outage(log, "the command listener")
        backoff = Backoff()
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10) as conn:
                    if outage.ongoing:  # what it had taken when the connection died, again
                        conn.execute(
                            "UPDATE engine_commands SET status = 'pending' WHERE status = 'taken'"
                        )
                    conn.execute(f"LISTEN {CHANNEL}")
                    outage.recovered()
                    backoff.reset()
                    while not self._stop.is_set():
                        self._drain(conn)
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            pass
            except psycopg.Error as exc:
                outage.failed(exc)
                self._stop.wait(backoff.next())

    def _drain(self, conn: psycopg.Connection[Any]) -> None:
        rows = conn.execute(
            "UPDATE engine_commands SET status = 'taken' WHERE id IN (SELECT id FROM"
            " engine_commands"
            " WHERE status = 'pending' ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 100)"
            " RETURNING id, kind, payload"
        ).fetchall()
        for command_id, kind, payload in sorted(rows):
            try:
                result = self._submit(to_command(kind, payload))
                conn.execute(
                    "UPDATE engine_commands SET status = 'done', result = %s, done_at = now()"
                    " WHERE id = %s",
                    (Jsonb(_plain(result)), command_id),
                )
            except errors.EngineError as error:
                self._failed(conn, command_id, error.code, error.message)
            except Exception as error:  # reported to the caller, not swallowed
                self._failed(conn, command_id, type(error).__name__, str(error))
            conn.execute(f"NOTIFY {DONE_CHANNEL}, '{int(command_id)}'")

    @staticmethod
    def _failed(conn: psycopg.Connection[Any], command_id: int, code: str, message: str) -> None:
        conn.execute(
            "UPDATE engine_commands SET status = 'failed', error = %s, done_at = now() WHERE id ="
            " %s",
            (Jsonb({"code": code, "message": message}), command_id),
        )


def send(conninfo: str, kind: str, payload: dict[str, Any], *, timeout: float = 30.0) -> Any:
    """Ask the engine that owns the database to run a command; its result, or its error."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"LISTEN {DONE_CHANNEL}")
        row = conn.execute(
            "INSERT INTO engine_commands (kind, payload) VALUES (%s, %s) RETURNING id",
            (kind, Jsonb(payload)),
        ).fetchone()
        assert row is not None
        command_id = int(row[0])
        conn.execute(f"NOTIFY {CHANNEL}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = conn.execute(
                "SELECT status, result, error FROM engine_commands WHERE id = %s", (command_id,)
            ).fetchone()
            assert found is not None
            status, result, error = found
            if status == "done":
                return result
            if status == "failed":
                raise _engine_error(error or {})
            for _ in conn.notifies(timeout=0.2, stop_after=1):
                pass
    raise TimeoutError(
        f"no engine answered within {timeout:.0f} s; is one running? (switchyard engine status)"
    )


def _engine_error(error: dict[str, Any]) -> errors.EngineError:
    code = str(error.get("code", "ValidationException"))
    kind = getattr(errors, code, None)
    cls = (
        kind
        if isinstance(kind, type) and issubclass(kind, errors.EngineError)
        else errors.EngineError
    )
    return cls(str(error.get("message", code)))
