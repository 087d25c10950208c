"""Loops: the inline step again and again until `until` holds, at most `max_iterations` times.

The iteration's state lives in `scope`: {iteration, previous, result, meta}. The output is the last
iteration's output with `iterations` added (a non-object is wrapped as {value, iterations}).
"""

from __future__ import annotations

from switchyard.compile.choice import choice_rule
from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.steps.failure import Fallback
from switchyard.compile.steps.sub_workflow import sub_workflow
from switchyard.compile.steps.task import lambda_step
from switchyard.compile.steps.unit import LOOP_RESULT, Unit
from switchyard.conditions import parse_condition
from switchyard.model import LoopStep, OnError, SubWorkflowBody


def loop_step(
    unit: Unit, step: LoopStep, *, on_error: OnError, fallback: Fallback | None
) -> Fragment:
    block = unit.block
    inner = Unit(unit.workflow, unit.step_id, block, scope=True, record_path=LOOP_RESULT)
    inner.extra_steps = set(step.after)
    body = step.step
    if isinstance(body, SubWorkflowBody):
        iteration = sub_workflow(inner, body, on_error=on_error, fallback=fallback)
        last_output = "States.JsonMerge($.scope.result.output, $.scope.meta, false)"
    else:
        iteration = lambda_step(inner, body, on_error=on_error, fallback=fallback)
        last_output = None
    begin: State = {
        "Type": "Pass",
        "Result": {"iteration": 1, "previous": None, "meta": {"iterations": 1}},
        "ResultPath": "$.scope",
        "Next": iteration.start,
    }
    begin_name = block.add(unit.name("first iteration"), begin)
    done: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' is done: its output is the last iteration's",
        "Parameters": {"status": "completed"},
        "ResultPath": unit.step_record,
    }
    if last_output is None:
        done["Parameters"]["output.$"] = f"{LOOP_RESULT}.loop_output"
    else:
        done["Parameters"]["output.$"] = last_output
    done_name = block.add(unit.name("done"), done)
    again: State = {
        "Type": "Pass",
        "Parameters": {
            "iteration.$": "States.MathAdd($.scope.iteration, 1)",
            "previous.$": f"{LOOP_RESULT}.output",
            "meta": {"iterations.$": "States.MathAdd($.scope.iteration, 1)"},
        },
        "ResultPath": "$.scope",
        "Next": iteration.start,
    }
    again_name = block.add(unit.name("next iteration"), again)
    choices = []
    if step.until is not None:
        choices.append({**choice_rule(parse_condition(step.until)), "Next": done_name})
    choices.append(
        {
            "Variable": "$.scope.iteration",
            "NumericGreaterThanEquals": step.max_iterations,
            "Next": done_name,
        }
    )
    decide: State = {"Type": "Choice", "Choices": choices, "Default": again_name}
    decide_name = block.add(unit.name("until"), decide)
    for exit_ in iteration.exits[:1]:  # the iteration's success; failures leave through the rest
        exit_.wire(decide_name)
    return Fragment(begin_name, [Exit(done), *iteration.exits[1:]])
