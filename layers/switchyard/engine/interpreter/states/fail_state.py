"""Fail: end this (sub-)machine with an error and a cause (ErrorPath/CausePath allowed)."""

from __future__ import annotations

from switchyard.engine.asl import Fail
from switchyard.engine.interpreter.model import Frame
from switchyard.engine.interpreter.outcomes import Failed, Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: Fail) -> Outcome:
    failure = state.failure(frame.input, step.context(frame), step.entropy)
    return Failed(failure.error, failure.cause)
