"""The durable interpreter's core: executions as frames, events in, transitions out."""

from switchyard.engine.interpreter.interpreter import Interpreter
from switchyard.engine.interpreter.model import (
    Children,
    Execution,
    ExecutionStatus,
    Frame,
    FrameStatus,
    HistoryEvent,
    TaskRequest,
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
    "Interpreter",
    "TaskRequest",
    "TimerRequest",
    "Transition",
]
