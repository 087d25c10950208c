"""Maps: one inline step per item, `MaxConcurrency` at a time; the output is the list of outputs.

A map's `timeout` limits the whole map: a deadline computed when the map starts is checked
before every item starts, and an item that would start past it fails the map with `timeout`
(items already running are limited by the inline step's own `timeout`; a Map state has no
`TimeoutSeconds`). A map's `output_schema` is checked on the list of outputs.
"""

from __future__ import annotations

from typing import Any

from switchyard.compile.context import context_parameters, referenced_steps, templates_of
from switchyard.compile.fragments import Fragment, State, close
from switchyard.compile.steps.composite import DEADLINE, deadline_task, output_check, past
from switchyard.compile.steps.failure import Fallback, caught_into, failure_path
from switchyard.compile.steps.sub_workflow import sub_workflow
from switchyard.compile.steps.task import lambda_step
from switchyard.compile.steps.unit import ITEM_RESULT, Unit
from switchyard.compile.template_paths import as_jsonpath, render_task
from switchyard.contract import StepErrorName
from switchyard.model import MapStep, OnError, SubWorkflowBody

RENDERED_ITEMS = "$.rendered"


def map_step(
    unit: Unit, step: MapStep, *, on_error: OnError, fallback: Fallback | None, max_parallel: int
) -> Fragment:
    block = unit.block
    items_path = as_jsonpath(step.items, unit.workflow)
    steps = referenced_steps(templates_of(step)) | set(step.after)
    selector: dict[str, Any] = {
        **context_parameters(steps, scope=False),
        "scope": {"item.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
    }
    inner_block = block.child()
    inner = Unit(unit.workflow, unit.step_id, inner_block, scope=True, record_path=ITEM_RESULT)
    inner.output_limit = unit.output_limit  # each item's share of the list in the state
    inner.extra_steps = set(step.after)
    body = step.step
    if isinstance(body, SubWorkflowBody):
        item_fragment = sub_workflow(inner, body, on_error=None)
    else:
        item_fragment = lambda_step(inner, body, on_error=None)
    close(item_fragment, inner_block, output_path=f"{ITEM_RESULT}.output")
    item_start = item_fragment.start
    if step.timeout:
        selector["scope"]["deadline.$"] = f"{DEADLINE}.at"
        item_start = _deadline_check(inner, step.timeout, item_start)
    state: State = {
        "Type": "Map",
        "Comment": f"'{unit.step_id}': one {body.type} step per item, "
        f"{step.max_concurrency} at a time",
        "ItemsPath": items_path or f"{RENDERED_ITEMS}.value",
        "ItemSelector": selector,
        "MaxConcurrency": min(step.max_concurrency, max_parallel),
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "INLINE"},
            **inner_block.as_definition(item_start),
        },
        "ResultSelector": {"status": "completed", "output.$": "$"},
        "ResultPath": unit.record_path,
    }
    name = block.add(unit.name(), state)
    start = name
    leave: State = state
    before: list[str] = []  # states before the Map, each caught into the failure path
    after: list[str] = []
    if step.output_schema is not None:
        check = output_check(unit, step.output_schema)
        state["Next"] = block.add(unit.name("check output"), check)
        after.append(state["Next"])
        leave = check
    if step.timeout:
        deadline = deadline_task(step.timeout)
        deadline["Next"] = start
        start = block.add(unit.name("deadline"), deadline)
        before.append(start)
    if items_path is None:
        render = render_task(
            step.items,
            unit.context(step),
            step_id=unit.step_id,
            result_path=RENDERED_ITEMS,
            after=list(step.after),
            merge=step.merge,
        )
        render["Comment"] = f"renders the list of items of '{unit.step_id}'"
        render["Next"] = start
        start = block.add(unit.name("items"), render)
        before.append(start)
    failure = failure_path(unit, resume=start, on_error=on_error, fallback=fallback)
    for caught in [*before, name, *after]:
        block.states[caught]["Catch"] = [caught_into(unit, ["States.ALL"], failure.start)]
    return Fragment(start, [unit.completed(leave), *failure.exits])


def _deadline_check(inner: Unit, seconds: int, item_start: str) -> str:
    """The item processor's first state: past the map's deadline, the item fails the map with
    `timeout` instead of starting."""
    block = inner.block
    stop: State = {
        "Type": "Fail",
        "Comment": f"'{inner.step_id}' ran past its timeout: no more items start",
        "Error": StepErrorName.TIMEOUT.value,
        "Cause": f"map {inner.step_id} ran past its timeout of {seconds} s before this item "
        "started",
    }
    check: State = {
        "Type": "Choice",
        "Comment": f"is '{inner.step_id}' still within its timeout of {seconds} s?",
        "Choices": [{**past("$.scope.deadline"), "Next": block.add(inner.name("timed out"), stop)}],
        "Default": item_start,
    }
    return block.add(inner.name("in time?"), check)
