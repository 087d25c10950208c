"""The in-memory shape of an execution: its frames (threads of control) and what a transition
changes. The interpreter mutates an `Execution` and records every change in a `Transition`, which
the engine commits to PostgreSQL before any effect (a dispatched task, a timer) becomes visible."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, cast

from switchyard.engine.asl import ExecutionContext, StateMachine

ProgramRef = tuple[tuple[str, int], ...]
"""Where a (sub-)machine lives: () is the top; (("Fork", 1),) the second branch of Parallel
state "Fork"; (("Each", -1),) the item processor of Map state "Each"."""


TaskKind = Literal["lambda", "lambda_direct", "callback", "child", "sqs", "unsupported"]
"""`lambda` (lambda:invoke), `lambda_direct` (a function ARN as the resource), `callback`
(.waitForTaskToken), `child` (states:startExecution), `sqs` (sendMessage), or `unsupported`."""
Integration = Literal["none", "sync", "sync:2"]
"""How a parent waits for a child execution: not at all, for its end (`.sync`, the description
as JSON text), or for its end with JSON (`.sync:2`)."""


@dataclass(frozen=True)
class TaskSpec:
    """The task a frame has in flight (stored with the frame, as JSON)."""

    kind: TaskKind
    resource: str
    token: str | None = None
    scheduled_event: int = 0
    timeout: int | None = None
    heartbeat: int | None = None
    child_arn: str | None = None
    """The child execution a `child` task started, once started."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "resource": self.resource,
            "token": self.token,
            "scheduled_event": self.scheduled_event,
            "timeout": self.timeout,
            "heartbeat": self.heartbeat,
        }
        if self.child_arn is not None:
            data["child_arn"] = self.child_arn
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskSpec:
        return cls(
            kind=cast(TaskKind, data["kind"]),
            resource=str(data.get("resource", "")),
            token=data.get("token"),
            scheduled_event=int(data.get("scheduled_event") or 0),
            timeout=data.get("timeout"),
            heartbeat=data.get("heartbeat"),
            child_arn=data.get("child_arn"),
        )


@dataclass(frozen=True)
class ParentTask:
    """A child execution's link to the task of its parent that started it (`sfn_executions.parent`,
    as JSON)."""

    execution_id: int
    arn: str
    frame: int
    attempt: int
    integration: Integration
    step: str | None = None
    """The parent's state that started the child (its run record's `parent_step`)."""

    @property
    def waits(self) -> bool:
        """The parent waits for the child's end (`.sync`, `.sync:2`)."""
        return self.integration != "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "execution_id": self.execution_id,
            "arn": self.arn,
            "frame": self.frame,
            "attempt": self.attempt,
            "integration": self.integration,
            "step": self.step,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ParentTask:
        return cls(
            execution_id=int(data["execution_id"]),
            arn=str(data.get("arn", "")),
            frame=int(data.get("frame") or 0),  # absent from the AWS recorder's mirrors
            attempt=int(data.get("attempt") or 0),
            integration=cast(Integration, data.get("integration") or "none"),
            step=data.get("step"),
        )


class ExecutionStatus(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        return self is not ExecutionStatus.RUNNING


class FrameStatus(StrEnum):
    RUNNING = "running"
    """Advancing through states now."""
    TASK = "task"
    """Waiting for a dispatched task (a function, a child execution, a callback)."""
    TIMER = "timer"
    """Waiting for a timer: a Wait state or a retry's backoff."""
    CHILDREN = "children"
    """A Parallel or Map state waiting for its branches or items."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (FrameStatus.SUCCEEDED, FrameStatus.FAILED, FrameStatus.CANCELLED)


@dataclass
class Children:
    """Progress of a Parallel or Map state's branches or items."""

    total: int
    results: dict[int, Any] = field(default_factory=dict)
    running: dict[int, int] = field(default_factory=dict)
    """Index -> frame id of the branches or items now running."""
    next_index: int = 0
    """Map: the next item to start."""
    failures: int = 0
    items: list[Any] | None = None
    """Map: the items; the state's effective input is kept so that retries see it."""
    effective_input: Any = None
    max_concurrency: int = 0
    tolerated_count: int | None = None
    tolerated_percentage: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "results": {str(k): v for k, v in self.results.items()},
            "running": {str(k): v for k, v in self.running.items()},
            "next_index": self.next_index,
            "failures": self.failures,
            "items": self.items,
            "effective_input": self.effective_input,
            "max_concurrency": self.max_concurrency,
            "tolerated_count": self.tolerated_count,
            "tolerated_percentage": self.tolerated_percentage,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Children:
        return cls(
            total=data["total"],
            results={int(k): v for k, v in data["results"].items()},
            running={int(k): v for k, v in data["running"].items()},
            next_index=data["next_index"],
            failures=data["failures"],
            items=data["items"],
            effective_input=data["effective_input"],
            max_concurrency=data["max_concurrency"],
            tolerated_count=data["tolerated_count"],
            tolerated_percentage=data["tolerated_percentage"],
        )


@dataclass
class Frame:
    """One thread of control: the top of the machine, a Parallel branch, or a Map item."""

    id: int
    parent: int | None
    program: ProgramRef
    state: str
    input: Any
    """The raw input of the current state."""
    status: FrameStatus = FrameStatus.RUNNING
    entered_at: datetime | None = None
    entered_event: int = 0
    retries: list[int] = field(default_factory=list)
    """Retries made by each retrier of the current state, during this visit."""
    attempt: int = 0
    """Dispatches of the current state's task; results of older attempts are ignored."""
    index: int | None = None
    """Branch or item index within the parent."""
    item: Any = None
    """Map item value ($$.Map.Item.Value)."""
    task: TaskSpec | None = None
    """The task in flight."""
    children: Children | None = None
    output: Any = None
    error: str | None = None
    cause: str | None = None
    dirty: bool = True

    def touch(self) -> None:
        self.dirty = True


@dataclass
class Execution:
    id: int
    arn: str
    name: str
    machine: StateMachine
    machine_arn: str
    """The state machine (or version) the execution runs."""
    input: Any
    context: ExecutionContext
    status: ExecutionStatus = ExecutionStatus.RUNNING
    output: Any = None
    error: str | None = None
    cause: str | None = None
    started_at: datetime | None = None
    stopped_at: datetime | None = None
    frames: dict[int, Frame] = field(default_factory=dict)
    next_frame: int = 1
    next_event: int = 1
    parent: ParentTask | None = None
    """For a child execution: the parent's task that started it."""
    redrive_count: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    """Optimistic-concurrency version of the execution row."""

    def new_frame(self, **fields: Any) -> Frame:
        frame = Frame(id=self.next_frame, **fields)
        self.next_frame += 1
        self.frames[frame.id] = frame
        return frame


@dataclass(frozen=True)
class HistoryEvent:
    id: int
    previous: int
    type: str
    timestamp: datetime
    details: dict[str, Any]
    """`{"<camelCaseType>EventDetails": {...}}` as GetExecutionHistory returns it, or {}."""


@dataclass(frozen=True)
class TaskRequest:
    """A task to run once the transition that scheduled it is committed."""

    execution_arn: str
    frame: int
    attempt: int
    kind: TaskKind
    resource: str
    parameters: Any
    token: str | None = None
    timeout_seconds: int | None = None


@dataclass(frozen=True)
class TimerRequest:
    execution_arn: str
    frame: int
    kind: str
    """`wait`, `retry`, `task_timeout`, `heartbeat` or `execution_timeout`."""
    fire_at: datetime
    attempt: int = 0


@dataclass
class Transition:
    """Everything one event did to one execution; committed together, then acted upon."""

    execution: Execution
    events: list[HistoryEvent] = field(default_factory=list)
    tasks: list[TaskRequest] = field(default_factory=list)
    timers: list[TimerRequest | tuple[int, str]] = field(default_factory=list)
    """Timers set (TimerRequest) and cancelled ((frame, kind)), in order: the last word wins."""
    tokens: list[tuple[str, int]] = field(default_factory=list)
    """Task tokens issued: (token, frame)."""
    revoked_tokens: list[str] = field(default_factory=list)
    settled_tasks: list[tuple[int, int]] = field(default_factory=list)
    """(frame, attempt) of dispatched tasks that are over: their rows can go."""
    finished: bool = False
    stopped_children: list[tuple[int, int]] = field(default_factory=list)
    """(frame, attempt) of child-execution tasks cancelled: their children must be stopped."""
    writes: list[tuple[int, str, Any]] = field(default_factory=list)
    """(frame, ResultPath text, value): where results were written, for run records."""
