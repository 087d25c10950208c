"""Maps: one inline step per item, `MaxConcurrency` at a time; the output is the list of outputs."""

from __future__ import annotations

from typing import Any

from switchyard.compile.context import context_parameters, referenced_steps, templates_of
from switchyard.compile.fragments import Exit, Fragment, State, close
from switchyard.compile.steps.failure import Fallback, catch, failure_path
from switchyard.compile.steps.sub_workflow import sub_workflow
from switchyard.compile.steps.task import lambda_step
from switchyard.compile.steps.unit import ITEM_RESULT, Unit
from switchyard.compile.template_paths import as_jsonpath, render_task
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
    inner.extra_steps = set(step.after)
    body = step.step
    if isinstance(body, SubWorkflowBody):
        item_fragment = sub_workflow(inner, body, on_error=None)
    else:
        item_fragment = lambda_step(inner, body, on_error=None)
    close(item_fragment, inner_block, output_path=f"{ITEM_RESULT}.output")
    state: State = {
        "Type": "Map",
        "Comment": f"'{unit.step_id}': one {body.type} step per item, "
        f"{step.max_concurrency} at a time",
        "ItemsPath": items_path or f"{RENDERED_ITEMS}.value",
        "ItemSelector": selector,
        "MaxConcurrency": min(step.max_concurrency, max_parallel),
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "INLINE"},
            **inner_block.as_definition(item_fragment.start),
        },
        "ResultSelector": {"status": "completed", "output.$": "$"},
        "ResultPath": unit.record_path,
    }
    if step.timeout:
        state["TimeoutSeconds"] = step.timeout
    name = block.add(unit.name(), state)
    start = name
    if items_path is None:
        render = render_task(
            step.items,
            unit.context(step),
            step_id=unit.step_id,
            result_path=RENDERED_ITEMS,
            after=list(step.after),
            merge=step.merge,
        )
        render["Next"] = name
        start = block.add(unit.name("items"), render)
    failure = failure_path(unit, resume=start, on_error=on_error, fallback=fallback)
    state["Catch"] = [catch(["States.ALL"], failure.start)]
    if items_path is None:
        block.states[start]["Catch"] = [catch(["States.ALL"], failure.start)]
    return Fragment(start, [Exit(state), *failure.exits])
