"""The rows the engine's store reads: one frozen dataclass per query shape, built by psycopg's
`class_row` from the columns the statement names (`sql.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from switchyard.engine.interpreter.model import ParentTask, TaskKind, TaskRequest


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
class VersionRow:
    """A published version of a state machine, with its definition."""

    arn: str
    machine_arn: str
    version: int
    definition_hash: str
    revision_id: str
    description: str | None
    created_at: datetime
    definition: str


@dataclass(frozen=True)
class VersionRef:
    """A version as a list or a publish names it."""

    arn: str
    version: int
    created_at: datetime


@dataclass(frozen=True)
class AliasRow:
    arn: str
    machine_arn: str
    name: str
    routing: list[dict[str, Any]]
    """[{stateMachineVersionArn, weight}]"""
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
    """The `ParentTask` of a child execution, as stored (`parent_task` reads it)."""
    options: dict[str, Any]
    next_event: int
    next_frame: int
    version: int

    @property
    def parent_task(self) -> ParentTask | None:
        return ParentTask.from_json(self.parent) if self.parent else None


@dataclass(frozen=True)
class FrameRow:
    """A frame as stored: its id and its JSON (`codec.py` reads it back)."""

    frame_id: int
    data: dict[str, Any]


@dataclass(frozen=True)
class HistoryRow:
    execution_id: int
    event_id: int
    previous_event_id: int
    type: str
    at: datetime
    details: dict[str, Any]


@dataclass(frozen=True)
class TaskRow:
    """A dispatched task whose result has not been recorded, with its execution's ARN."""

    execution_id: int
    execution_arn: str
    frame_id: int
    attempt: int
    kind: TaskKind
    resource: str
    parameters: Any
    token: str | None
    timeout_seconds: int | None

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.execution_id, self.frame_id, self.attempt)

    def request(self) -> TaskRequest:
        return TaskRequest(
            self.execution_arn, self.frame_id, self.attempt, self.kind, self.resource,
            self.parameters, self.token, self.timeout_seconds,
        )  # fmt: skip


@dataclass(frozen=True)
class TimerRow:
    execution_id: int
    frame_id: int
    kind: str
    attempt: int
    fire_at: datetime


@dataclass(frozen=True)
class TokenRow:
    """Where a task token ever issued points, and whether it was closed."""

    execution_id: int
    frame_id: int
    closed: bool


@dataclass(frozen=True)
class DeadLetterRow:
    id: int
    queue_url: str
    body: str
    execution_id: int | None
    sent_at: datetime


@dataclass(frozen=True)
class OrphanRow:
    """A running child whose parent has ended."""

    arn: str
    parent_name: str
    parent_status: str
