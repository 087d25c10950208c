"""Reads and writes of the engine's tables. The coordinator commits a batch of transitions in
one database transaction (`write_transitions`); everything else here is a small query."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from switchyard.engine.interpreter.model import Execution, TaskRequest, TimerRequest, Transition
from switchyard.engine.store.codec import frame_from_json, frame_to_json, json_text

Connection = psycopg.Connection[Any]

ORPHANS_SQL = """
SELECT c.arn, p.name, p.status
  FROM sfn_executions c
  JOIN sfn_executions p ON p.id = (c.parent->>'execution_id')::bigint
 WHERE c.status = 'RUNNING' AND p.status <> 'RUNNING' AND NOT c.options ? 'recorded_from'
"""
RUNNING_CHILDREN_SQL = """
SELECT arn FROM sfn_executions
 WHERE status = 'RUNNING' AND (parent->>'execution_id')::bigint = %s
   AND (parent->>'frame')::int = %s AND (parent->>'attempt')::int = %s
"""
SET_PARENT_SQL = "UPDATE sfn_executions SET parent = %s::jsonb WHERE id = %s"
REDRIVEN_SQL = "UPDATE sfn_executions SET redrive_at = %s WHERE id = %s"
TASK_SQL = """
SELECT kind, resource, parameters, token, timeout_seconds FROM sfn_tasks
 WHERE execution_id = %s AND frame_id = %s AND attempt = %s
"""


def _json(value: Any) -> str:
    return json_text(value)


def definition_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class MachineRow:
    arn: str
    name: str
    type: str
    definition: str
    definition_hash: str
    role_arn: str
    revision_id: str
    description: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ExecutionRow:
    id: int
    arn: str
    machine_arn: str
    version_arn: str | None
    definition_hash: str
    name: str
    status: str
    input: Any
    output: Any
    error: str | None
    cause: str | None
    started_at: datetime
    stopped_at: datetime | None
    redrive_count: int
    redrive_at: datetime | None
    parent: dict[str, Any] | None
    options: dict[str, Any]
    next_event: int
    next_frame: int
    version: int


class EngineStore:
    """Queries over one connection; the caller decides the transaction boundaries."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    # --- definitions and machines ------------------------------------------------------------

    def save_definition(self, text: str) -> str:
        digest = definition_hash(text)
        self.conn.execute(
            "INSERT INTO sfn_definitions (hash, definition) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (digest, text),
        )
        return digest

    def definition(self, digest: str) -> str:
        row = self.conn.execute(
            "SELECT definition FROM sfn_definitions WHERE hash = %s", (digest,)
        ).fetchone()
        if row is None:
            raise KeyError(digest)
        return str(row[0])

    def insert_machine(
        self,
        *,
        arn: str,
        name: str,
        machine_type: str,
        digest: str,
        role_arn: str,
        revision: str,
        description: str | None,
    ) -> None:
        self.conn.execute(
            "INSERT INTO sfn_state_machines (arn, name, type, definition_hash, role_arn,"
            " revision_id, description)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (arn, name, machine_type, digest, role_arn, revision, description),
        )

    def update_machine(
        self, arn: str, *, digest: str | None, role_arn: str | None, revision: str
    ) -> None:
        self.conn.execute(
            "UPDATE sfn_state_machines SET definition_hash = COALESCE(%s, definition_hash),"
            " role_arn = COALESCE(%s, role_arn), revision_id = %s, updated_at = now() WHERE arn ="
            " %s",
            (digest, role_arn, revision, arn),
        )

    def machine(self, arn: str) -> MachineRow | None:
        row = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT m.*, d.definition FROM sfn_state_machines m"
                " JOIN sfn_definitions d ON d.hash = m.definition_hash WHERE m.arn = %s",
                (arn,),
            )
            .fetchone()
        )
        return _machine(row) if row else None

    def machine_by_name(self, name: str) -> MachineRow | None:
        row = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT m.*, d.definition FROM sfn_state_machines m"
                " JOIN sfn_definitions d ON d.hash = m.definition_hash WHERE m.name = %s",
                (name,),
            )
            .fetchone()
        )
        return _machine(row) if row else None

    def machines(self) -> list[MachineRow]:
        rows = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT m.*, d.definition FROM sfn_state_machines m"
                " JOIN sfn_definitions d ON d.hash = m.definition_hash ORDER BY m.created_at,"
                " m.name"
            )
            .fetchall()
        )
        return [_machine(row) for row in rows]

    def delete_machine(self, arn: str) -> None:
        self.conn.execute("DELETE FROM sfn_state_machines WHERE arn = %s", (arn,))

    def publish_version(
        self, machine_arn: str, *, digest: str, revision: str, description: str | None
    ) -> tuple[str, int, datetime]:
        row = self.conn.execute(
            "SELECT version, arn, created_at FROM sfn_state_machine_versions WHERE machine_arn = %s"
            " AND revision_id = %s",
            (machine_arn, revision),
        ).fetchone()
        if row is not None:  # publishing the same revision again returns the same version
            return str(row[1]), int(row[0]), row[2]
        number = self.conn.execute(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM sfn_state_machine_versions WHERE"
            " machine_arn = %s",
            (machine_arn,),
        ).fetchone()
        assert number is not None
        version = int(number[0])
        arn = f"{machine_arn}:{version}"
        created = self.conn.execute(
            "INSERT INTO sfn_state_machine_versions (arn, machine_arn, version, definition_hash,"
            " revision_id, description)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING created_at",
            (arn, machine_arn, version, digest, revision, description),
        ).fetchone()
        assert created is not None
        return arn, version, created[0]

    def version(self, arn: str) -> dict[str, Any] | None:
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT v.*, d.definition FROM sfn_state_machine_versions v"
                " JOIN sfn_definitions d ON d.hash = v.definition_hash WHERE v.arn = %s",
                (arn,),
            )
            .fetchone()
        )

    def versions(self, machine_arn: str) -> list[dict[str, Any]]:
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT arn, version, created_at FROM sfn_state_machine_versions WHERE"
                " machine_arn = %s"
                " ORDER BY version DESC",
                (machine_arn,),
            )
            .fetchall()
        )

    def upsert_alias(
        self,
        arn: str,
        machine_arn: str,
        name: str,
        routing: list[dict[str, Any]],
        description: str | None,
    ) -> None:
        self.conn.execute(
            "INSERT INTO sfn_aliases (arn, machine_arn, name, routing, description) VALUES (%s,"
            " %s, %s, %s, %s)"
            " ON CONFLICT (arn) DO UPDATE SET routing = EXCLUDED.routing,"
            " description = COALESCE(EXCLUDED.description, sfn_aliases.description), updated_at ="
            " now()",
            (arn, machine_arn, name, _json(routing), description),
        )

    def alias(self, arn: str) -> dict[str, Any] | None:
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute("SELECT * FROM sfn_aliases WHERE arn = %s", (arn,))
            .fetchone()
        )

    def aliases(self, machine_arn: str) -> list[dict[str, Any]]:
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT * FROM sfn_aliases WHERE machine_arn = %s ORDER BY created_at DESC, name",
                (machine_arn,),
            )
            .fetchall()
        )

    def delete_alias(self, arn: str) -> bool:
        return self.conn.execute("DELETE FROM sfn_aliases WHERE arn = %s", (arn,)).rowcount > 0

    def delete_version(self, arn: str) -> None:
        self.conn.execute("DELETE FROM sfn_state_machine_versions WHERE arn = %s", (arn,))

    # --- executions ----------------------------------------------------------------------------

    # The three reads of a batch of starts. Each `*_later` sends its query and returns a function
    # that reads the answer: in pipeline mode the queries travel together, one round trip in all.

    def machine_hashes_later(self, arns: Sequence[str]) -> Callable[[], dict[str, str]]:
        """Machine ARN -> current definition hash, for the machines that exist."""
        cursor = self.conn.execute(
            "SELECT arn, definition_hash FROM sfn_state_machines WHERE arn = ANY(%s)", (list(arns),)
        )
        return lambda: {str(arn): str(digest) for arn, digest in cursor.fetchall()}

    def executions_named_later(
        self, names: Iterable[tuple[str, str]]
    ) -> Callable[[], list[ExecutionRow]]:
        """The executions among (machine ARN, name) pairs that exist."""
        pairs = list(names)
        cursor = self.conn.cursor(row_factory=dict_row).execute(
            "SELECT e.* FROM sfn_executions e"
            " JOIN unnest(%s::text[], %s::text[]) AS n(machine_arn, name)"
            " ON e.machine_arn = n.machine_arn AND e.name = n.name",
            ([m for m, _ in pairs], [n for _, n in pairs]),
        )
        return lambda: [ExecutionRow(**row) for row in cursor.fetchall()]

    def next_execution_ids_later(self, count: int) -> Callable[[], list[int]]:
        cursor = self.conn.execute(
            "SELECT nextval('sfn_executions_id_seq') FROM generate_series(1, %s)", (count,)
        )
        return lambda: [int(row[0]) for row in cursor.fetchall()]

    def next_execution_ids(self, count: int) -> list[int]:
        return self.next_execution_ids_later(count)()

    def insert_execution(
        self, execution: Execution, *, version_arn: str | None, digest: str
    ) -> None:
        """Insert the execution under its id (drawn beforehand from `next_execution_ids`)."""
        self.conn.execute(
            "INSERT INTO sfn_executions (id, arn, machine_arn, version_arn, definition_hash, name,"
            " status,"
            " input, started_at, parent, options, next_event, next_frame)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, 1, 1)",
            (
                execution.id,
                execution.arn,
                execution.machine_arn,
                version_arn,
                digest,
                execution.name,
                execution.status.value,
                _json(execution.input),
                execution.started_at,
                _json(execution.parent) if execution.parent else None,
                _json(execution.options),
            ),
        )

    def execution_row(
        self, *, arn: str | None = None, execution_id: int | None = None
    ) -> ExecutionRow | None:
        where, value = ("arn", arn) if arn is not None else ("id", execution_id)
        row = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                f"SELECT * FROM sfn_executions WHERE {where} = %s",
                (value,),
            )
            .fetchone()
        )
        return ExecutionRow(**row) if row else None

    def execution_by_name(self, machine_arn: str, name: str) -> ExecutionRow | None:
        row = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT * FROM sfn_executions WHERE machine_arn = %s AND name = %s",
                (machine_arn, name),
            )
            .fetchone()
        )
        return ExecutionRow(**row) if row else None

    def executions(
        self, *, machine_arn: str | None, status: str | None, limit: int, after_id: int | None
    ) -> list[ExecutionRow]:
        clauses: list[str] = []
        params: list[Any] = []
        if machine_arn:
            clauses.append("(machine_arn = %s OR version_arn = %s)")
            params += [machine_arn, machine_arn]
        if status:
            clauses.append("status = %s")
            params.append(status)
        if after_id is not None:
            clauses.append("id < %s")
            params.append(after_id)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                f"SELECT * FROM sfn_executions {where} ORDER BY id DESC LIMIT %s",
                (*params, limit),
            )
            .fetchall()
        )
        return [ExecutionRow(**row) for row in rows]

    def execution_page(
        self,
        *,
        machine_arn: str,
        qualified_arn: str | None,
        status: str | None,
        redriven: bool | None,
        before_id: int | None,
        limit: int,
    ) -> list[ExecutionRow]:
        """ListExecutions: newest first; a qualified ARN keeps the executions started on that
        version or alias (the API records the alias in `options.stateMachineAliasArn`)."""
        clauses: list[str] = ["machine_arn = %s"]
        params: list[Any] = [machine_arn]
        if qualified_arn is not None:
            clauses.append("(version_arn = %s OR options->>'stateMachineAliasArn' = %s)")
            params += [qualified_arn, qualified_arn]
        if status is not None:
            clauses.append("status = %s")
            params.append(status)
        if redriven is not None:
            clauses.append("redrive_count > 0" if redriven else "redrive_count = 0")
        if before_id is not None:
            clauses.append("id < %s")
            params.append(before_id)
        rows = (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                f"SELECT * FROM sfn_executions WHERE {' AND '.join(clauses)}"
                " ORDER BY id DESC LIMIT %s",
                (*params, limit),
            )
            .fetchall()
        )
        return [ExecutionRow(**row) for row in rows]

    def open_execution_ids(self) -> list[int]:
        rows = self.conn.execute(
            "SELECT id FROM sfn_executions WHERE status = 'RUNNING'"
            " AND NOT options ? 'recorded_from' ORDER BY id"
        ).fetchall()
        return [int(r[0]) for r in rows]

    def frames(self, execution_id: int) -> list[tuple[int, dict[str, Any]]]:
        rows = self.conn.execute(
            "SELECT frame_id, data FROM sfn_frames WHERE execution_id = %s ORDER BY frame_id",
            (execution_id,),
        ).fetchall()
        return [(int(r[0]), r[1]) for r in rows]

    def history(
        self, execution_id: int, *, after: int, limit: int, reverse: bool
    ) -> list[dict[str, Any]]:
        if reverse:
            rows = (
                self.conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT * FROM sfn_history WHERE execution_id = %s AND event_id < %s"
                    " ORDER BY event_id DESC LIMIT %s",
                    (execution_id, after or 2**31 - 1, limit),
                )
                .fetchall()
            )
        else:
            rows = (
                self.conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT * FROM sfn_history WHERE execution_id = %s AND event_id > %s"
                    " ORDER BY event_id LIMIT %s",
                    (execution_id, after, limit),
                )
                .fetchall()
            )
        return list(rows)

    def pending_tasks(self) -> list[dict[str, Any]]:
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT t.*, e.arn AS execution_arn FROM sfn_tasks t JOIN sfn_executions e ON"
                " e.id = t.execution_id"
                " WHERE e.status = 'RUNNING' ORDER BY t.created_at"
            )
            .fetchall()
        )

    def timers(self) -> list[dict[str, Any]]:
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT t.*, e.arn AS execution_arn FROM sfn_timers t JOIN sfn_executions e ON"
                " e.id = t.execution_id"
                " WHERE e.status = 'RUNNING'"
            )
            .fetchall()
        )

    def orphaned_children(self) -> list[tuple[str, str, str]]:
        """(child ARN, parent name, parent status) of the running children whose parent has
        ended (an engine stopped before it stopped them). Executions the recorder mirrors from
        AWS are not the engine's to stop."""
        rows = self.conn.execute(ORPHANS_SQL).fetchall()
        return [(str(arn), str(name), str(status)) for arn, name, status in rows]

    def running_children(self, execution_id: int, frame_id: int, attempt: int) -> list[str]:
        """The ARNs of the running children a task of this execution started."""
        rows = self.conn.execute(RUNNING_CHILDREN_SQL, (execution_id, frame_id, attempt))
        return [str(row[0]) for row in rows.fetchall()]

    def set_parent(self, execution_id: int, parent: dict[str, Any]) -> None:
        self.conn.execute(SET_PARENT_SQL, (_json(parent), execution_id))

    def mark_redriven(self, execution_id: int, at: datetime) -> None:
        self.conn.execute(REDRIVEN_SQL, (at, execution_id))

    def task_request(
        self, execution_arn: str, execution_id: int, frame_id: int, attempt: int
    ) -> TaskRequest | None:
        """The dispatched, unfinished task of this frame and attempt, if any."""
        row = self.conn.execute(TASK_SQL, (execution_id, frame_id, attempt)).fetchone()
        if row is None:
            return None
        return TaskRequest(execution_arn, frame_id, attempt, row[0], row[1], row[2], row[3], row[4])

    def tokens(self, tokens: Sequence[str]) -> dict[str, tuple[int, int, bool]]:
        """`token` for many tokens at once (the ones ever issued)."""
        rows = self.conn.execute(
            "SELECT token, execution_id, frame_id, closed_at IS NOT NULL FROM sfn_task_tokens"
            " WHERE token = ANY(%s)",
            (list(tokens),),
        ).fetchall()
        return {str(r[0]): (int(r[1]), int(r[2]), bool(r[3])) for r in rows}

    def execution_rows_later(self, ids: Iterable[int]) -> Callable[[], dict[int, ExecutionRow]]:
        cursor = self.conn.cursor(row_factory=dict_row).execute(
            "SELECT * FROM sfn_executions WHERE id = ANY(%s)", (list(ids),)
        )
        return lambda: {int(row["id"]): ExecutionRow(**row) for row in cursor.fetchall()}

    def frames_of_later(
        self, ids: Iterable[int]
    ) -> Callable[[], dict[int, list[tuple[int, dict[str, Any]]]]]:
        """`frames` of many executions at once."""
        cursor = self.conn.execute(
            "SELECT execution_id, frame_id, data FROM sfn_frames WHERE execution_id = ANY(%s)"
            " ORDER BY execution_id, frame_id",
            (list(ids),),
        )

        def read() -> dict[int, list[tuple[int, dict[str, Any]]]]:
            found: dict[int, list[tuple[int, dict[str, Any]]]] = {}
            for execution_id, frame_id, data in cursor.fetchall():
                found.setdefault(int(execution_id), []).append((int(frame_id), data))
            return found

        return read

    def tasks_of_later(self, ids: Iterable[int]) -> Callable[[], list[dict[str, Any]]]:
        """The dispatched, unfinished tasks of these executions."""
        cursor = self.conn.cursor(row_factory=dict_row).execute(
            "SELECT t.*, e.arn AS execution_arn FROM sfn_tasks t"
            " JOIN sfn_executions e ON e.id = t.execution_id WHERE t.execution_id = ANY(%s)",
            (list(ids),),
        )
        return cursor.fetchall

    def token(self, token: str) -> tuple[int, int, bool] | None:
        """(execution id, frame id, closed) of a task token ever issued."""
        row = self.conn.execute(
            "SELECT execution_id, frame_id, closed_at IS NOT NULL FROM sfn_task_tokens"
            " WHERE token = %s",
            (token,),
        ).fetchone()
        return (int(row[0]), int(row[1]), bool(row[2])) if row else None

    def dead_letter(self, queue_url: str, body: str, execution_id: int | None) -> None:
        self.conn.execute(
            "INSERT INTO sfn_dead_letters (queue_url, body, execution_id) VALUES (%s, %s, %s)",
            (queue_url, body, execution_id),
        )

    def dead_letters(self, execution_id: int | None = None) -> list[dict[str, Any]]:
        if execution_id is None:
            return (
                self.conn.cursor(row_factory=dict_row)
                .execute("SELECT * FROM sfn_dead_letters ORDER BY id")
                .fetchall()
            )
        return (
            self.conn.cursor(row_factory=dict_row)
            .execute(
                "SELECT * FROM sfn_dead_letters WHERE execution_id = %s ORDER BY id",
                (execution_id,),
            )
            .fetchall()
        )

    # --- the coordinator's batch write ---------------------------------------------------------

    def write_transitions(self, transitions: Sequence[Transition]) -> None:
        """Everything a batch of transitions changed, in the caller's transaction."""
        history: list[tuple[Any, ...]] = []
        frames: list[tuple[Any, ...]] = []
        tasks_new: list[tuple[Any, ...]] = []
        tasks_done: list[tuple[Any, ...]] = []
        tokens_new: list[tuple[Any, ...]] = []
        tokens_gone: list[tuple[Any, ...]] = []
        timers: dict[tuple[int, int, str], TimerRequest | None] = {}
        executions: dict[int, Execution] = {}
        for transition in transitions:
            execution = transition.execution
            eid = execution.id
            executions[eid] = execution
            for event in transition.events:
                history.append(
                    (
                        eid,
                        event.id,
                        event.previous,
                        event.type,
                        event.timestamp,
                        _json(event.details),
                    )
                )
            for frame in execution.frames.values():
                if frame.dirty:
                    frames.append((eid, frame.id, frame.status.value, _json(frame_to_json(frame))))
                    frame.dirty = False
            for request in transition.tasks:
                tasks_new.append(
                    (eid, request.frame, request.attempt, request.kind, request.resource,
                     _json(request.parameters), request.token, request.timeout_seconds)
                )  # fmt: skip
            tasks_done += [(eid, frame, attempt) for frame, attempt in transition.settled_tasks]
            tokens_new += [(token, eid, frame) for token, frame in transition.tokens]
            tokens_gone += [(token,) for token in transition.revoked_tokens]
            for op in transition.timers:  # in order: the last word on a timer wins
                if isinstance(op, TimerRequest):
                    timers[(eid, op.frame, op.kind)] = op
                else:
                    timers[(eid, op[0], op[1])] = None
        timers_gone = [key for key, op in timers.items() if op is None]
        timers_set = [
            (key[0], op.frame, op.kind, op.attempt, op.fire_at)
            for key, op in timers.items()
            if op is not None
        ]
        cursor = self.conn.cursor()
        if history:
            cursor.executemany(
                "INSERT INTO sfn_history (execution_id, event_id, previous_event_id, type, at,"
                " details)"
                " VALUES (%s, %s, %s, %s, %s, %s::jsonb)",
                history,
            )
        if frames:
            cursor.executemany(
                "INSERT INTO sfn_frames (execution_id, frame_id, status, data) VALUES (%s, %s,"
                " %s, %s::jsonb)"
                " ON CONFLICT (execution_id, frame_id) DO UPDATE SET status = EXCLUDED.status,"
                " data = EXCLUDED.data",
                frames,
            )
        if timers_gone:
            cursor.executemany(
                "DELETE FROM sfn_timers WHERE execution_id = %s AND frame_id = %s AND kind = %s",
                timers_gone,
            )
        if timers_set:
            cursor.executemany(
                "INSERT INTO sfn_timers (execution_id, frame_id, kind, attempt, fire_at) VALUES"
                " (%s, %s, %s, %s, %s)"
                " ON CONFLICT (execution_id, frame_id, kind) DO UPDATE SET attempt ="
                " EXCLUDED.attempt,"
                " fire_at = EXCLUDED.fire_at",
                timers_set,
            )
        if tasks_done:
            cursor.executemany(
                "DELETE FROM sfn_tasks WHERE execution_id = %s AND frame_id = %s AND attempt = %s",
                tasks_done,
            )
        if tasks_new:
            cursor.executemany(
                "INSERT INTO sfn_tasks (execution_id, frame_id, attempt, kind, resource,"
                " parameters, token,"
                " timeout_seconds) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s) ON CONFLICT DO"
                " NOTHING",
                tasks_new,
            )
        if tokens_gone:
            cursor.executemany(
                "UPDATE sfn_task_tokens SET closed_at = now() WHERE token = %s", tokens_gone
            )
        if tokens_new:
            cursor.executemany(
                "INSERT INTO sfn_task_tokens (token, execution_id, frame_id) VALUES (%s, %s, %s)",
                tokens_new,
            )
        rows = [
            (
                ex.status.value,
                _json(ex.output) if ex.status.value == "SUCCEEDED" else None,
                ex.error,
                ex.cause,
                ex.stopped_at,
                ex.redrive_count,
                ex.next_event,
                ex.next_frame,
                ex.id,
            )
            for ex in executions.values()
        ]
        cursor.executemany(
            "UPDATE sfn_executions SET status = %s, output = %s::jsonb, error = %s, cause = %s,"
            " stopped_at = %s,"
            " redrive_count = %s, next_event = %s, next_frame = %s, version = version + 1 WHERE"
            " id = %s",
            rows,
        )
        if any(t.finished for t in transitions):
            done = [(t.execution.id,) for t in transitions if t.finished]
            cursor.executemany("DELETE FROM sfn_timers WHERE execution_id = %s", done)
            cursor.executemany("DELETE FROM sfn_tasks WHERE execution_id = %s", done)
            cursor.executemany(
                "UPDATE sfn_task_tokens SET closed_at = now()"
                " WHERE execution_id = %s AND closed_at IS NULL",
                done,
            )

    def load_frames(
        self, execution: Execution, rows: list[tuple[int, dict[str, Any]]] | None = None
    ) -> None:
        """The execution's frames, from `rows` when they were read already."""
        for frame_id, data in self.frames(execution.id) if rows is None else rows:
            execution.frames[frame_id] = frame_from_json(frame_id, data)


def _machine(row: dict[str, Any]) -> MachineRow:
    return MachineRow(
        arn=row["arn"],
        name=row["name"],
        type=row["type"],
        definition=row["definition"],
        definition_hash=row["definition_hash"],
        role_arn=row["role_arn"],
        revision_id=row["revision_id"],
        description=row["description"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def chunks(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
