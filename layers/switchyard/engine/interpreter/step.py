"""The context a state handler works in during one transition: the clock, the randomness, the
history it appends to, and the effects it requests."""

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from switchyard.engine.asl import Entropy, MapItem, StateMachine
from switchyard.engine.interpreter.events import MAX_EVENTS
from switchyard.engine.interpreter.model import (
    Execution,
    Frame,
    FrameStatus,
    HistoryEvent,
    ProgramRef,
    TaskRequest,
    TimerRequest,
    Transition,
)


class HistoryLimitReachedError(Exception):
    """The execution would write more than 25,000 history events."""


@dataclass
class Step:
    execution: Execution
    transition: Transition
    now: datetime
    entropy: Entropy
    runnable: deque[int] = field(default_factory=deque)

    # --- history ---------------------------------------------------------------------------

    def emit(self, event_type: str, details: dict[str, Any], *, previous: int | None = None) -> int:
        execution = self.execution
        event_id = execution.next_event
        if event_id > MAX_EVENTS and not event_type.startswith("Execution"):
            raise HistoryLimitReachedError()
        execution.next_event += 1
        prior = previous if previous is not None else event_id - 1
        self.transition.events.append(HistoryEvent(event_id, prior, event_type, self.now, details))
        return event_id

    # --- programs and context --------------------------------------------------------------

    def program(self, ref: ProgramRef) -> StateMachine:
        machine = self.execution.machine
        for state_name, branch in ref:
            state = machine.states[state_name]
            machine = state.item_processor if branch < 0 else state.branches[branch]  # type: ignore[attr-defined]
        return machine

    def context(
        self,
        frame: Frame,
        *,
        token: str | None = None,
        map_item: MapItem | None = None,
    ) -> dict[str, Any]:
        retry_count = sum(frame.retries)
        entered = frame.entered_at or self.now
        return self.execution.context.for_state(
            frame.state, entered, retry_count=retry_count, task_token=token, map_item=map_item
        )

    # --- effects ---------------------------------------------------------------------------

    def dispatch(self, request: TaskRequest) -> None:
        self.transition.tasks.append(request)

    def set_timer(self, frame: Frame, kind: str, fire_at: datetime) -> None:
        self.transition.timers.append(
            TimerRequest(self.execution.arn, frame.id, kind, fire_at, frame.attempt)
        )

    def cancel_timer(self, frame: Frame, kind: str) -> None:
        self.transition.timers.append((frame.id, kind))

    def new_token(self, frame: Frame) -> str:
        token = secrets.token_urlsafe(48)
        self.transition.tokens.append((token, frame.id))
        return token

    def spawn(
        self,
        parent: Frame,
        program: ProgramRef,
        start_at: str,
        state_input: Any,
        *,
        index: int,
        item: Any = None,
    ) -> Frame:
        child = self.execution.new_frame(
            parent=parent.id,
            program=program,
            state=start_at,
            input=state_input,
            index=index,
            item=item,
            status=FrameStatus.RUNNING,
        )
        child.entered_at = None
        self.runnable.append(child.id)
        return child

    def wake(self, frame: Frame) -> None:
        frame.status = FrameStatus.RUNNING
        frame.touch()
        self.runnable.append(frame.id)

    def record_write(self, frame: Frame, path_text: str | None, value: Any) -> None:
        if path_text:
            self.transition.writes.append((frame.id, path_text, value))
