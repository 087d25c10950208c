"""Pass: pass its input on, or a fixed `Result`, or `Parameters`, through ResultPath."""

from __future__ import annotations

from switchyard.engine.asl import Pass
from switchyard.engine.interpreter.dataflow import effective_input, finish, parameters
from switchyard.engine.interpreter.model import Frame
from switchyard.engine.interpreter.outcomes import Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: Pass) -> Outcome:
    effective = effective_input(state, frame)
    if state.parameters is not None:
        result = parameters(state.parameters, effective, step, step.context(frame))
    elif state.has_result:
        result = state.result
    else:
        result = effective
    return finish(step, frame, state, result, result_path=state.result_path)
