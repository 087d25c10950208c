"""Reads and writes of the engine's tables. The coordinator commits a batch of transitions in
one database transaction (`write_transitions`); everything else here is a small query. The
statements are in `sql.py`, the rows they read in `rows.py`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg.rows import class_row

from switchyard.engine.interpreter.model import (
    Execution,
    ParentTask,
    TaskRequest,
    TimerRequest,
    Transition,
)
from switchyard.engine.store import sql
from switchyard.engine.store.codec import frame_from_json, frame_to_json, json_text
from switchyard.engine.store.rows import (
    AliasRow,
    DeadLetterRow,
    ExecutionRow,
    FrameRow,
    HistoryRow,
    MachineRow,
    OrphanRow,
    TaskRow,
    TimerRow,
    TokenRow,
    VersionRef,
    VersionRow,
)

Connection = psycopg.Connection[Any]
Row = TypeVar("Row")


def _json(value: Any) -> str:
    return json_text(value)


def definition_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class EngineStore:
    """Queries over one connection; the caller decides the transaction boundaries."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def _one(self, row: type[Row], query: str, params: Sequence[Any] = ()) -> Row | None:
        return self.conn.cursor(row_factory=class_row(row)).execute(query, params).fetchone()

    def _all(self, row: type[Row], query: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.cursor(row_factory=class_row(row)).execute(query, params).fetchall()

    # --- definitions and machines ------------------------------------------------------------

    def save_definition(self, text: str) -> str:
        digest = definition_hash(text)
        self.conn.execute(sql.INSERT_DEFINITION, (digest, text))
        return digest

    def definition(self, digest: str) -> str:
        row = self.conn.execute(sql.DEFINITION, (digest,)).fetchone()
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
            sql.INSERT_MACHINE, (arn, name, machine_type, digest, role_arn, revision, description)
        )

    def update_machine(
        self, arn: str, *, digest: str | None, role_arn: str | None, revision: str
    ) -> None:
        self.conn.execute(sql.UPDATE_MACHINE, (digest, role_arn, revision, arn))

    def machine(self, arn: str) -> MachineRow | None:
        return self._one(MachineRow, sql.MACHINE, (arn,))

    def machine_by_name(self, name: str) -> MachineRow | None:
        return self._one(MachineRow, sql.MACHINE_BY_NAME, (name,))

    def machines(self) -> list[MachineRow]:
        return self._all(MachineRow, sql.MACHINES)

    def delete_machine(self, arn: str) -> None:
        self.conn.execute(sql.DELETE_MACHINE, (arn,))

    def publish_version(
        self, machine_arn: str, *, digest: str, revision: str, description: str | None
    ) -> VersionRef:
        found = self._one(VersionRef, sql.VERSION_OF_REVISION, (machine_arn, revision))
        if found is not None:  # publishing the same revision again returns the same version
            return found
        number = self.conn.execute(sql.NEXT_VERSION, (machine_arn,)).fetchone()
        assert number is not None
        version = int(number[0])
        arn = f"{machine_arn}:{version}"
        created = self._one(
            VersionRef,
            sql.INSERT_VERSION,
            (arn, machine_arn, version, digest, revision, description),
        )
        assert created is not None
        return created

    def version(self, arn: str) -> VersionRow | None:
        return self._one(VersionRow, sql.VERSION, (arn,))

    def versions(self, machine_arn: str) -> list[VersionRef]:
        return self._all(VersionRef, sql.VERSIONS, (machine_arn,))

    def upsert_alias(
        self,
        arn: str,
        machine_arn: str,
        name: str,
        routing: list[dict[str, Any]],
        description: str | None,
    ) -> None:
        self.conn.execute(sql.UPSERT_ALIAS, (arn, machine_arn, name, _json(routing), description))

    def alias(self, arn: str) -> AliasRow | None:
        return self._one(AliasRow, sql.ALIAS, (arn,))

    def aliases(self, machine_arn: str) -> list[AliasRow]:
        return self._all(AliasRow, sql.ALIASES, (machine_arn,))

    def delete_alias(self, arn: str) -> bool:
        return self.conn.execute(sql.DELETE_ALIAS, (arn,)).rowcount > 0

    def delete_version(self, arn: str) -> None:
        self.conn.execute(sql.DELETE_VERSION, (arn,))

    # --- executions ----------------------------------------------------------------------------

    # The three reads of a batch of starts. Each `*_later` sends its query and returns a function
    # that reads the answer: in pipeline mode the queries travel together, one round trip in all.

    def machine_hashes_later(self, arns: Sequence[str]) -> Callable[[], dict[str, str]]:
        """Machine ARN -> current definition hash, for the machines that exist."""
        cursor = self.conn.execute(sql.MACHINE_HASHES, (list(arns),))
        return lambda: {str(arn): str(digest) for arn, digest in cursor.fetchall()}

    def executions_named_later(
        self, names: Iterable[tuple[str, str]]
    ) -> Callable[[], list[ExecutionRow]]:
        """The executions among (machine ARN, name) pairs that exist."""
        pairs = list(names)
        cursor = self.conn.cursor(row_factory=class_row(ExecutionRow)).execute(
            sql.EXECUTIONS_NAMED, ([m for m, _ in pairs], [n for _, n in pairs])
        )
        return cursor.fetchall

    def next_execution_ids_later(self, count: int) -> Callable[[], list[int]]:
        cursor = self.conn.execute(sql.NEXT_EXECUTION_IDS, (count,))
        return lambda: [int(row[0]) for row in cursor.fetchall()]

    def next_execution_ids(self, count: int) -> list[int]:
        return self.next_execution_ids_later(count)()

    def insert_execution(
        self, execution: Execution, *, version_arn: str | None, digest: str
    ) -> None:
        """Insert the execution under its id (drawn beforehand from `next_execution_ids`)."""
        self.conn.execute(
            sql.INSERT_EXECUTION,
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
                _json(execution.parent.to_json()) if execution.parent else None,
                _json(execution.options),
            ),
        )

    def execution_row(
        self, *, arn: str | None = None, execution_id: int | None = None
    ) -> ExecutionRow | None:
        if arn is not None:
            return self._one(ExecutionRow, sql.EXECUTION_BY_ARN, (arn,))
        return self._one(ExecutionRow, sql.EXECUTION_BY_ID, (execution_id,))

    def execution_by_name(self, machine_arn: str, name: str) -> ExecutionRow | None:
        return self._one(ExecutionRow, sql.EXECUTION_BY_NAME, (machine_arn, name))

    def executions(
        self, *, machine_arn: str | None, status: str | None, limit: int, after_id: int | None
    ) -> list[ExecutionRow]:
        clauses: list[str] = ["TRUE"]
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
        query = sql.EXECUTIONS_WHERE.format(where=" AND ".join(clauses))
        return self._all(ExecutionRow, query, (*params, limit))

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
        query = sql.EXECUTIONS_WHERE.format(where=" AND ".join(clauses))
        return self._all(ExecutionRow, query, (*params, limit))

    def open_execution_ids(self) -> list[int]:
        return [int(r[0]) for r in self.conn.execute(sql.OPEN_EXECUTION_IDS).fetchall()]

    def frames(self, execution_id: int) -> list[FrameRow]:
        return self._all(FrameRow, sql.FRAMES, (execution_id,))

    def history(
        self, execution_id: int, *, after: int, limit: int, reverse: bool
    ) -> list[HistoryRow]:
        if reverse:
            return self._all(
                HistoryRow, sql.HISTORY_BEFORE, (execution_id, after or 2**31 - 1, limit)
            )
        return self._all(HistoryRow, sql.HISTORY_AFTER, (execution_id, after, limit))

    def pending_tasks(self) -> list[TaskRow]:
        return self._all(TaskRow, sql.PENDING_TASKS)

    def timers(self) -> list[TimerRow]:
        return self._all(TimerRow, sql.TIMERS)

    def orphaned_children(self) -> list[OrphanRow]:
        """The running children whose parent has ended (an engine stopped before it stopped
        them)."""
        return self._all(OrphanRow, sql.ORPHANS)

    def running_children(self, execution_id: int, frame_id: int, attempt: int) -> list[str]:
        """The ARNs of the running children a task of this execution started."""
        rows = self.conn.execute(sql.RUNNING_CHILDREN, (execution_id, frame_id, attempt))
        return [str(row[0]) for row in rows.fetchall()]

    def set_parent(self, execution_id: int, parent: ParentTask) -> None:
        self.conn.execute(sql.SET_PARENT, (_json(parent.to_json()), execution_id))

    def mark_redriven(self, execution_id: int, at: datetime) -> None:
        self.conn.execute(sql.REDRIVEN, (at, execution_id))

    def task_request(self, execution_id: int, frame_id: int, attempt: int) -> TaskRequest | None:
        """The dispatched, unfinished task of this frame and attempt, if any."""
        row = self._one(TaskRow, sql.TASK, (execution_id, frame_id, attempt))
        return row.request() if row else None

    def tokens(self, tokens: Sequence[str]) -> dict[str, TokenRow]:
        """`token` for many tokens at once (the ones ever issued)."""
        rows = self.conn.execute(sql.TOKENS, (list(tokens),)).fetchall()
        return {str(r[0]): TokenRow(int(r[1]), int(r[2]), bool(r[3])) for r in rows}

    def execution_rows_later(self, ids: Iterable[int]) -> Callable[[], dict[int, ExecutionRow]]:
        cursor = self.conn.cursor(row_factory=class_row(ExecutionRow)).execute(
            sql.EXECUTIONS_BY_ID, (list(ids),)
        )
        return lambda: {row.id: row for row in cursor.fetchall()}

    def frames_of_later(self, ids: Iterable[int]) -> Callable[[], dict[int, list[FrameRow]]]:
        """`frames` of many executions at once."""
        cursor = self.conn.execute(sql.FRAMES_OF, (list(ids),))

        def read() -> dict[int, list[FrameRow]]:
            found: dict[int, list[FrameRow]] = {}
            for execution_id, frame_id, data in cursor.fetchall():
                found.setdefault(int(execution_id), []).append(FrameRow(int(frame_id), data))
            return found

        return read

    def tasks_of_later(self, ids: Iterable[int]) -> Callable[[], list[TaskRow]]:
        """The dispatched, unfinished tasks of these executions."""
        cursor = self.conn.cursor(row_factory=class_row(TaskRow)).execute(
            sql.TASKS_OF, (list(ids),)
        )
        return cursor.fetchall

    def token(self, token: str) -> TokenRow | None:
        """Where a task token ever issued points, and whether it was closed."""
        return self._one(TokenRow, sql.TOKEN, (token,))

    def dead_letter(self, queue_url: str, body: str, execution_id: int | None) -> None:
        self.conn.execute(sql.INSERT_DEAD_LETTER, (queue_url, body, execution_id))

    def dead_letters(self, execution_id: int | None = None) -> list[DeadLetterRow]:
        if execution_id is None:
            return self._all(DeadLetterRow, sql.DEAD_LETTERS)
        return self._all(DeadLetterRow, sql.DEAD_LETTERS_OF, (execution_id,))

    # --- the coordinator's batch write ---------------------------------------------------------

    def write_transitions(self, transitions: Sequence[Transition]) -> None:
        """Everything a batch of transitions changed, in the caller's transaction: one statement
        per table and chunk of rows (a multi-row VALUES list), not one per row."""
        history: list[tuple[Any, ...]] = []
        frames: dict[tuple[int, int], tuple[Any, ...]] = {}
        tasks_new: list[tuple[Any, ...]] = []
        tasks_done: list[tuple[int, int, int]] = []
        tokens_new: list[tuple[Any, ...]] = []
        tokens_gone: list[tuple[str, int]] = []
        timers: dict[tuple[int, int, str], TimerRequest | None] = {}
        executions: dict[int, Execution] = {}
        for transition in transitions:
            execution = transition.execution
            eid = execution.id
            executions[eid] = execution
            for event in transition.events:
                history.append(
                    (eid, event.id, event.previous, event.type, event.timestamp,
                     _json(event.details))
                )  # fmt: skip
            for frame in execution.frames.values():
                if frame.dirty:  # the same frame twice in a batch: its last state is written
                    frames[(eid, frame.id)] = (
                        eid, frame.id, frame.status.value, _json(frame_to_json(frame))
                    )  # fmt: skip
                    frame.dirty = False
            for request in transition.tasks:
                tasks_new.append(
                    (eid, request.frame, request.attempt, request.kind, request.resource,
                     _json(request.parameters), request.token, request.timeout_seconds)
                )  # fmt: skip
            tasks_done += [(eid, frame, attempt) for frame, attempt in transition.settled_tasks]
            tokens_new += [(token, eid, frame) for token, frame in transition.tokens]
            tokens_gone += [(token, eid) for token in transition.revoked_tokens]
            for op in transition.timers:  # in order: the last word on a timer wins
                if isinstance(op, TimerRequest):
                    timers[(eid, op.frame, op.kind)] = op
                else:
                    timers[(eid, op[0], op[1])] = None
        # An execution that finished in this batch loses all its timers, tasks and open tokens
        # at the end (`sql.END_EXECUTIONS`): deleting some of them one by one first is redundant.
        done = [t.execution.id for t in transitions if t.finished]
        ended = set(done)
        timers_gone = [key for key, op in timers.items() if op is None and key[0] not in ended]
        timers_set = [
            (key[0], op.frame, op.kind, op.attempt, op.fire_at)
            for key, op in timers.items()
            if op is not None
        ]
        cursor = self.conn.cursor()
        _write_rows(cursor, sql.INSERT_HISTORY, history)
        _write_rows(cursor, sql.UPSERT_FRAMES, list(frames.values()))
        _write_rows(cursor, sql.DELETE_TIMERS, timers_gone)
        _write_rows(cursor, sql.UPSERT_TIMERS, timers_set)
        _write_rows(cursor, sql.DELETE_TASKS, [t for t in tasks_done if t[0] not in ended])
        _write_rows(cursor, sql.INSERT_TASKS, tasks_new)
        gone = [token for token, eid in tokens_gone if eid not in ended]
        if gone:
            cursor.execute(sql.CLOSE_TOKENS, (gone,))
        _write_rows(cursor, sql.INSERT_TOKENS, tokens_new)
        rows = [
            (
                ex.id,
                ex.status.value,
                _json(ex.output) if ex.status.value == "SUCCEEDED" else None,
                ex.error,
                ex.cause,
                ex.stopped_at,
                ex.redrive_count,
                ex.next_event,
                ex.next_frame,
            )
            for ex in executions.values()
        ]
        _write_rows(cursor, sql.UPDATE_EXECUTIONS, rows)
        if done:
            cursor.execute(sql.END_EXECUTIONS, (done, done, done))

    def load_frames(self, execution: Execution, rows: list[FrameRow] | None = None) -> None:
        """The execution's frames, from `rows` when they were read already."""
        for row in self.frames(execution.id) if rows is None else rows:
            execution.frames[row.frame_id] = frame_from_json(row.frame_id, row.data)


def _write_rows(
    cursor: psycopg.Cursor[Any], statement: sql.RowsStatement, rows: Sequence[tuple[Any, ...]]
) -> None:
    """`statement` over `rows`, `statement.chunk` rows a statement."""
    chunk = statement.chunk
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        cursor.execute(statement.text(len(part)), [value for row in part for value in row])


def chunks(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
