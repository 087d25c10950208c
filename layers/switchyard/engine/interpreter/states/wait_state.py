"""Wait: a timer row, so that a waiting run costs no memory and survives restarts."""

from __future__ import annotations

from switchyard.engine.asl import Wait, apply_output_path, wait_until
from switchyard.engine.interpreter.dataflow import effective_input, go_on
from switchyard.engine.interpreter.model import Frame, FrameStatus
from switchyard.engine.interpreter.outcomes import SUSPENDED, Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: Wait) -> Outcome:
    effective = effective_input(state, frame)
    until = wait_until(state.wait, effective, step.now)
    frame.output = apply_output_path(state.output_path, effective)
    if until <= step.now:
        return go_on(state, frame.output)
    frame.status = FrameStatus.TIMER
    step.set_timer(frame, "wait", until)
    return SUSPENDED


def resume(step: Step, frame: Frame, state: Wait) -> Outcome:
    """The timer fired."""
    return go_on(state, frame.output)
