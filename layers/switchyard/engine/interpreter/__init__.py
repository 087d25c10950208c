"""The durable interpreter's core: executions as frames, events in, transitions out."""

from switchyard.engine.interpreter.interpreter import Interpreter
from switchyard.engine.interpreter.model import (
    Children,
    Execution,
    ExecutionStatus,
    Frame,
    FrameStatus,
    HistoryEvent,
    Integration,
    ParentTask,
    TaskKind,
    TaskRequest,
    TaskSpec,
    TimerRequest,
    Transition,
)
from switchyard.engine.interpreter.states.task_state import InlineResult, InlineRunner

__all__ = [
    "Children",
    "Execution",
    "ExecutionStatus",
    "Frame",
    "FrameStatus",
    "HistoryEvent",
    "InlineResult",
    "InlineRunner",
    "Integration",
    "Interpreter",
    "ParentTask",
    "TaskKind",
    "TaskRequest",
    "TaskSpec",
    "TimerRequest",
    "Transition",
]
