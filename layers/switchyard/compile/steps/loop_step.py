"""Loops: the inline step again and again until `until` holds, at most `max_iterations` times.

The iteration's state lives in `scope`: {iteration, previous, result, meta}. The output is the last
iteration's output with `iterations` added (a non-object is wrapped as {value, iterations}).

A loop's `timeout` limits the whole loop: a deadline computed when the loop starts is checked
before every iteration after the first, and a loop past it fails with `timeout` (an iteration
already running is limited by the inline step's own `timeout`). A loop's `output_schema` is
checked on its output once it is done.

A loop with `continue_as_new` also keeps `segment_end` in its scope, the last iteration this
execution runs; past it, the loop hands the run on to a new execution (continue_as_new.py).
"""

from __future__ import annotations

from switchyard.compile.choice import choice_rule
from switchyard.compile.fragments import Fragment, State
from switchyard.compile.steps.composite import (
    DEADLINE,
    deadline_task,
    output_check,
    past,
    timed_out_error,
)
from switchyard.compile.steps.continue_as_new import hand_on, resume_state
from switchyard.compile.steps.failure import Fallback, caught_into, failure_entry
from switchyard.compile.steps.sub_workflow import sub_workflow
from switchyard.compile.steps.task import lambda_step
from switchyard.compile.steps.unit import LOOP_RESULT, Unit
from switchyard.conditions import parse_condition
from switchyard.model import LoopStep, OnError, SubWorkflowBody


def loop_step(
    unit: Unit,
    step: LoopStep,
    *,
    on_error: OnError,
    fallback: Fallback | None,
    resumes: dict[str, str] | None = None,
) -> Fragment:
    """The loop's states; with `continue_as_new`, `resumes` gets the state a continued segment
    enters it by."""
    block = unit.block
    inner = Unit(unit.workflow, unit.step_id, block, scope=True, record_path=LOOP_RESULT)
    inner.output_limit = unit.output_limit
    inner.extra_steps = set(step.after)
    body = step.step
    if isinstance(body, SubWorkflowBody):
        iteration = sub_workflow(inner, body, on_error=on_error, fallback=fallback)
        last_output = "States.JsonMerge($.scope.result.output, $.scope.meta, false)"
    else:
        iteration = lambda_step(inner, body, on_error=on_error, fallback=fallback)
        last_output = None
    # The loop's own failures (its timeout, its output_schema) take the iteration's failure path.
    failure = failure_entry(iteration.exits[0].state)
    begin: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' starts its first iteration",
        "Result": {"iteration": 1, "previous": None, "meta": {"iterations": 1}},
        "ResultPath": "$.scope",
        "Next": iteration.start,
    }
    rule = step.continue_as_new
    if rule is not None:
        begin["Result"]["segment_end"] = rule.after
    begin_name = block.add(unit.name("first iteration"), begin)
    start = begin_name
    if step.timeout:
        deadline = deadline_task(step.timeout)
        deadline["Next"] = begin_name
        deadline["Catch"] = [caught_into(unit, ["States.ALL"], failure)]
        start = block.add(unit.name("deadline"), deadline)
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
    leave: State = done
    if step.output_schema is not None:
        check = output_check(unit, step.output_schema)
        check["Catch"] = [caught_into(unit, ["States.ALL"], failure)]
        done["Next"] = block.add(unit.name("check output"), check)
        leave = check
    again: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' goes on to its next iteration, with this one's output as "
        "previous",
        "Parameters": {
            "iteration.$": "States.MathAdd($.scope.iteration, 1)",
            "previous.$": f"{LOOP_RESULT}.output",
            "meta": {"iterations.$": "States.MathAdd($.scope.iteration, 1)"},
        },
        "ResultPath": "$.scope",
        "Next": iteration.start,
    }
    if rule is not None:
        again["Parameters"]["segment_end.$"] = "$.scope.segment_end"
    again_name = block.add(unit.name("next iteration"), again)
    go_on = again_name
    if step.timeout:
        go_on = _deadline_check(unit, step.timeout, again_name, failure)
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
    if rule is not None:
        hand = hand_on(
            unit,
            summary=rule.summary,
            deadline=bool(step.timeout),
            failure=failure,
            why=f"'{unit.step_id}' ran {rule.after} iterations in this execution",
        )
        if step.timeout:
            hand = _deadline_check(unit, step.timeout, hand, failure, role="before it goes on")
        choices.append(
            {
                "Variable": "$.scope.iteration",
                "NumericGreaterThanEqualsPath": "$.scope.segment_end",
                "Next": hand,
            }
        )
        if resumes is not None:
            resumes[unit.step_id] = resume_state(
                unit, rule.after, iteration.start, deadline=bool(step.timeout)
            )
    decide: State = {
        "Type": "Choice",
        "Comment": f"is '{unit.step_id}' done? Its until holds, or it ran {step.max_iterations} "
        "iterations",
        "Choices": choices,
        "Default": go_on,
    }
    decide_name = block.add(unit.name("until"), decide)
    for exit_ in iteration.exits[:1]:  # the iteration's success; failures leave through the rest
        exit_.wire(decide_name)
    return Fragment(start, [unit.completed(leave), *iteration.exits[1:]])


def _deadline_check(unit: Unit, seconds: int, again: str, failure: str, *, role: str = "") -> str:
    """A Choice before the next iteration: past the deadline, the loop fails with `timeout`."""
    suffix = f" {role}" if role else ""
    block = unit.block
    timed_out = timed_out_error(
        {
            "Cause.$": f"States.Format('loop {unit.step_id} ran past its timeout of {seconds} s "
            "after {} iterations', $.scope.iteration)"
        }
    )
    timed_out["Comment"] = f"'{unit.step_id}' ran past its timeout: it fails with timeout"
    timed_out["ResultPath"] = unit.step_record  # where the tail looks for the caught error
    timed_out["Next"] = failure
    check: State = {
        "Type": "Choice",
        "Comment": f"is '{unit.step_id}' still within its timeout of {seconds} s?",
        "Choices": [
            {
                **past(f"{DEADLINE}.at"),
                "Next": block.add(unit.name(f"timed out{suffix}"), timed_out),
            }
        ],
        "Default": again,
    }
    return block.add(unit.name(f"in time{suffix}?"), check)
