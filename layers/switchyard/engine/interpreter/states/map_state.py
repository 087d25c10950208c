"""Map (inline): one run of the item processor per item, at most MaxConcurrency at a time;
failures beyond the tolerated count or percentage fail the state."""

from __future__ import annotations

from typing import Any

from switchyard.engine.asl import (
    AslFailure,
    Map,
    MapItem,
    StatesError,
    apply_input_path,
    resolve_seconds,
)
from switchyard.engine.interpreter.dataflow import effective_input, finish
from switchyard.engine.interpreter.events import details
from switchyard.engine.interpreter.model import Children, Frame, FrameStatus
from switchyard.engine.interpreter.outcomes import SUSPENDED, Failed, Outcome
from switchyard.engine.interpreter.step import Step


def enter(step: Step, frame: Frame, state: Map) -> Outcome:
    effective = effective_input(state, frame)
    items = apply_input_path(state.items_path, effective) if state.items_path else effective
    if not isinstance(items, list):
        raise AslFailure(
            StatesError.RUNTIME,
            f"Item path {state.items_path.text if state.items_path else '$'} does not point to "
            "an array",
        )
    concurrency = resolve_seconds(
        state.max_concurrency,
        state.max_concurrency_path,
        effective,
        "MaxConcurrencyPath",
        minimum=0,
    )
    tolerated = resolve_seconds(
        state.tolerated_failure_count,
        state.tolerated_failure_count_path,
        effective,
        "ToleratedFailureCountPath",
        minimum=0,
    )
    percentage = state.tolerated_failure_percentage
    if percentage is None and state.tolerated_failure_percentage_path is not None:
        found = state.tolerated_failure_percentage_path.evaluate(effective)
        percentage = float(found) if isinstance(found, int | float) else None
    step.emit("MapStateStarted", details("MapStateStarted", length=len(items)))
    frame.children = Children(
        total=len(items),
        items=items,
        effective_input=effective,
        max_concurrency=concurrency or 0,
        tolerated_count=tolerated,
        tolerated_percentage=percentage,
    )
    frame.status = FrameStatus.CHILDREN
    frame.touch()
    if not items:
        return _done(step, frame, state)
    _start_more(step, frame, state)
    return SUSPENDED


def _start_more(step: Step, frame: Frame, state: Map) -> None:
    children = frame.children
    assert children is not None and children.items is not None
    limit = children.max_concurrency or children.total
    while children.next_index < children.total and len(children.running) < limit:
        index = children.next_index
        children.next_index += 1
        value = children.items[index]
        item_input = value
        if state.item_selector is not None:
            context = step.context(frame, map_item=MapItem(index, value))
            item_input = state.item_selector.evaluate(
                children.effective_input, context, step.entropy
            )
        step.emit(
            "MapIterationStarted", details("MapIterationStarted", name=state.name, index=index)
        )
        processor = state.item_processor
        child = step.spawn(
            frame,
            (*frame.program, (state.name, -1)),
            processor.start_at,
            item_input,
            index=index,
            item=value,
        )
        children.running[index] = child.id
    frame.touch()


def child_succeeded(step: Step, frame: Frame, state: Map, index: int, output: Any) -> Outcome:
    children = frame.children
    assert children is not None
    step.emit(
        "MapIterationSucceeded", details("MapIterationSucceeded", name=state.name, index=index)
    )
    children.results[index] = output
    children.running.pop(index, None)
    if len(children.results) == children.total:
        return _done(step, frame, state)
    _start_more(step, frame, state)
    return SUSPENDED


def child_failed(
    step: Step, frame: Frame, state: Map, index: int, error: str, cause: str
) -> tuple[Outcome, bool]:
    """An item failed. Returns the outcome and whether the other items must be cancelled."""
    children = frame.children
    assert children is not None
    step.emit("MapIterationFailed", details("MapIterationFailed", name=state.name, index=index))
    children.running.pop(index, None)
    children.failures += 1
    if _tolerated(children):
        children.results[index] = {"Error": error, "Cause": cause}
        if len(children.results) == children.total:
            return _done(step, frame, state), False
        _start_more(step, frame, state)
        return SUSPENDED, False
    step.emit("MapStateFailed", {})
    frame.children = None
    frame.touch()
    if children.tolerated_count is not None or children.tolerated_percentage is not None:
        return Failed(
            StatesError.EXCEED_TOLERATED_FAILURE_THRESHOLD.value,
            "The specified tolerated failure threshold was exceeded",
        ), True
    return Failed(error, cause), True


def _tolerated(children: Children) -> bool:
    if children.tolerated_count is not None and children.failures <= children.tolerated_count:
        return True
    if children.tolerated_percentage is not None and children.total:
        return children.failures * 100.0 / children.total <= children.tolerated_percentage
    return False


def _done(step: Step, frame: Frame, state: Map) -> Outcome:
    children = frame.children
    assert children is not None
    step.emit("MapStateSucceeded", {})
    results = [children.results[i] for i in range(children.total)]
    frame.children = None
    return finish(
        step, frame, state, results, result_path=state.result_path, selector=state.result_selector
    )
