"""Choice: the first rule that matches names the next state (else Default)."""

from __future__ import annotations

from switchyard.engine.asl import ChoiceState, apply_output_path, choose
from switchyard.engine.interpreter.dataflow import effective_input
from switchyard.engine.interpreter.model import Frame
from switchyard.engine.interpreter.outcomes import Next, Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: ChoiceState) -> Outcome:
    effective = effective_input(state, frame)
    target = choose(state.choices, state.default, effective, step.context(frame))
    return Next(target, apply_output_path(state.output_path, effective))
