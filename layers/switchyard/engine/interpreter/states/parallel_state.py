"""Parallel: every branch runs on the same input; the output is the list of branch outputs."""

from __future__ import annotations

from typing import Any

from switchyard.engine.asl import Parallel
from switchyard.engine.interpreter.dataflow import effective_input, finish, parameters
from switchyard.engine.interpreter.model import Children, Frame, FrameStatus
from switchyard.engine.interpreter.outcomes import SUSPENDED, Failed, Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: Parallel) -> Outcome:
    effective = effective_input(state, frame)
    branch_input = parameters(state.parameters, effective, step, step.context(frame))
    step.emit("ParallelStateStarted", {})
    frame.children = Children(total=len(state.branches), effective_input=branch_input)
    frame.status = FrameStatus.CHILDREN
    frame.touch()
    for index, branch in enumerate(state.branches):
        child = step.spawn(
            frame, (*frame.program, (state.name, index)), branch.start_at, branch_input, index=index
        )
        frame.children.running[index] = child.id
    return SUSPENDED


def child_succeeded(step: Step, frame: Frame, state: Parallel, index: int, output: Any) -> Outcome:
    children = frame.children
    assert children is not None
    children.results[index] = output
    children.running.pop(index, None)
    frame.touch()
    if len(children.results) < children.total:
        return SUSPENDED
    step.emit("ParallelStateSucceeded", {})
    results = [children.results[i] for i in range(children.total)]
    frame.children = None
    return finish(
        step, frame, state, results, result_path=state.result_path, selector=state.result_selector
    )


def child_failed(step: Step, frame: Frame, state: Parallel, error: str, cause: str) -> Outcome:
    """A branch failed: the others are cancelled (by the interpreter) and the state fails."""
    step.emit("ParallelStateFailed", {})
    frame.children = None
    frame.touch()
    return Failed(error, cause)
