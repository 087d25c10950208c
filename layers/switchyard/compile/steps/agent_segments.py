"""An agent in segments: an agent step with `continue_as_new`, its tool loop spread over
executions of the run.

The agent is compiled as a loop that continues as new after every iteration, an iteration being
one call of agent_step, which runs at most `after` model turns (runtime/agent_segments.py):

    first segment → agent_step ─ answer ──────────────────────────→ done: the step's record
                                 └ continued (its summary) → hand on → next segment
    next segment (resume?) ──→ agent_step, `previous` the summary → ...

A call that answers ends the step, its answer the step's output (no `iterations` added: to the
steps after it this is an agent like any other). A call that returns the model's summary
(`StepResult.continued`) hands the run on to a new execution as a loop does
(steps/continue_as_new.py), with that summary as the next call's `previous`. The hand-over is
the loop's, so whatever a continued loop keeps across segments (the run's id and budget, step
records, cost summed in the run records) an agent keeps too.

The agent's `timeout` limits each call, as it always does; its `budget` is shared by all its
calls (the payload's `parent_budget`, keyed by the step without the segment).
"""

from __future__ import annotations

from switchyard.compile.fragments import Fragment, State
from switchyard.compile.steps.continue_as_new import hand_on, resume_state
from switchyard.compile.steps.failure import Fallback, failure_entry
from switchyard.compile.steps.task import lambda_step
from switchyard.compile.steps.unit import LOOP_RESULT, Unit
from switchyard.model import AgentStep, OnError

CONTINUED = f"{LOOP_RESULT}.continued"
"""Where the call's result says it returned a summary, not an answer."""


def agent_in_segments(
    unit: Unit,
    step: AgentStep,
    *,
    on_error: OnError,
    fallback: Fallback | None,
    resumes: dict[str, str] | None = None,
) -> Fragment:
    """The agent's states; `resumes` gets the state a continued segment enters it by."""
    assert step.continue_as_new is not None
    block = unit.block
    inner = Unit(unit.workflow, unit.step_id, block, scope=True, record_path=LOOP_RESULT)
    inner.output_limit = unit.output_limit
    inner.extra_steps = set(step.after)
    call = lambda_step(inner, step, on_error=on_error, fallback=fallback)
    failure = failure_entry(call.exits[0].state)
    begin: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' starts its tool loop, for at most "
        f"{step.continue_as_new.after} model turns in this execution",
        "Result": {"iteration": 1, "previous": None, "meta": {"iterations": 1}},
        "ResultPath": "$.scope",
        "Next": call.start,
    }
    start = block.add(unit.name("first segment"), begin)
    done: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' answered: its output is the answer",
        "Parameters": {"status": "completed", "output.$": f"{LOOP_RESULT}.output"},
        "ResultPath": unit.step_record,
    }
    done_name = block.add(unit.name("done"), done)
    hand = hand_on(
        unit,
        summary=None,  # the call's output is the summary
        deadline=False,
        failure=failure,
        why=f"'{unit.step_id}' summarised its work instead of answering",
    )
    decide: State = {
        "Type": "Choice",
        "Comment": f"did '{unit.step_id}' answer, or summarise its work to go on in a new "
        "execution?",
        "Choices": [{"Variable": CONTINUED, "BooleanEquals": True, "Next": hand}],
        "Default": done_name,
    }
    decide_name = block.add(unit.name("answered?"), decide)
    for exit_ in call.exits[:1]:  # the call's success; failures leave through the rest
        exit_.wire(decide_name)
    if resumes is not None:
        resumes[unit.step_id] = resume_state(unit, 1, call.start, deadline=False)
    return Fragment(start, [unit.completed(done), *call.exits[1:]])
