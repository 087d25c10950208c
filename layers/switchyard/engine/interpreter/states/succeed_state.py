"""Succeed: end this (sub-)machine with the input."""

from __future__ import annotations

from switchyard.engine.asl import Succeed, apply_output_path
from switchyard.engine.interpreter.dataflow import effective_input
from switchyard.engine.interpreter.model import Frame
from switchyard.engine.interpreter.outcomes import Ended, Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: Succeed) -> Outcome:
    return Ended(apply_output_path(state.output_path, effective_input(state, frame)))
