"""InputPath → Parameters → (work) → ResultSelector → ResultPath → OutputPath, shared by states."""

from __future__ import annotations

from typing import Any

from switchyard.engine.asl import (
    PayloadTemplate,
    ReferencePath,
    State,
    apply_input_path,
    apply_output_path,
    apply_result_path,
)
from switchyard.engine.interpreter.model import Frame
from switchyard.engine.interpreter.outcomes import Ended, Next, Outcome
from switchyard.engine.interpreter.step import Step


def effective_input(state: State, frame: Frame) -> Any:
    return apply_input_path(state.input_path, frame.input)


def parameters(
    template: PayloadTemplate | None, effective: Any, step: Step, context: dict[str, Any]
) -> Any:
    if template is None:
        return effective
    return template.evaluate(effective, context, step.entropy)


def finish(
    step: Step,
    frame: Frame,
    state: Any,
    result: Any,
    *,
    result_path: ReferencePath | None,
    selector: PayloadTemplate | None = None,
    context: dict[str, Any] | None = None,
) -> Outcome:
    """Apply ResultSelector, ResultPath and OutputPath to a result and go on."""
    if selector is not None:
        result = selector.evaluate(result, context or step.context(frame), step.entropy)
    combined = apply_result_path(result_path, frame.input, result)
    if result_path is not None:
        step.record_write(frame, result_path.text, result)
    output = apply_output_path(state.output_path, combined)
    return go_on(state, output)


def go_on(state: Any, output: Any) -> Outcome:
    if getattr(state, "end", False) or state.is_terminal:
        return Ended(output)
    return Next(state.next, output)
