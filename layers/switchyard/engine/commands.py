"""What the coordinator is asked to do: each command becomes one transition (or none)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

from switchyard.engine.dispatch import TaskOutcome
from switchyard.engine.interpreter.model import ParentTask

CallbackKind = Literal["success", "failure", "heartbeat"]


@dataclass
class Command:
    reply: Future[Any] | None = field(default=None, kw_only=True)


@dataclass
class StartExecution(Command):
    machine_arn: str
    name: str
    input: Any
    options: dict[str, Any] = field(default_factory=dict)
    parent: ParentTask | None = None


@dataclass
class TaskDone(Command):
    outcome: TaskOutcome


@dataclass
class Callback(Command):
    token: str
    kind: CallbackKind
    output: Any = None
    error: str = ""
    cause: str = ""


@dataclass
class TimerFired(Command):
    execution_id: int
    frame: int
    kind: str
    attempt: int


@dataclass
class StopExecution(Command):
    arn: str
    error: str | None = None
    cause: str | None = None


@dataclass
class RedriveExecution(Command):
    arn: str


@dataclass
class StartChild(Command):
    execution_id: int
    frame: int
    attempt: int
    resource: str
    parameters: Any


@dataclass
class ChildFinished(Command):
    child_arn: str
