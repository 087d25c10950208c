"""Rules of `continue_as_new` on loops and agents (docs/workflow-format.md, "Continue-as-new").

A step that continues as new ends its execution and starts the next segment of the run at that
step, so the step must be where the whole run is: every other step runs before it or after it,
never beside it (a step beside it would be cut off, or run again), and it is no fallback (which
runs in another step's place). A loop hands on every `after` iterations; an agent every `after`
model turns of its tool loop, so only a top-level agent with tools can.
"""

from __future__ import annotations

from switchyard.diagnostics import Code
from switchyard.model import AgentBody, AgentStep, LoopStep, MapStep
from switchyard.model.steps import (
    MAX_AGENT_TURNS,
    MAX_CONTINUED_ITERATIONS,
    MAX_CONTINUED_TURNS,
    MAX_LOOP_ITERATIONS,
)
from switchyard.source import DocPath
from switchyard.validate.context import Checks
from switchyard.validate.graph import Upstream


def check_continue_as_new(checks: Checks, upstream: Upstream) -> None:
    workflow = checks.workflow
    fallbacks = workflow.fallback_steps()
    for step_id, step in workflow.steps.items():
        base: DocPath = ("steps", step_id)
        if isinstance(step, MapStep | LoopStep) and isinstance(step.step, AgentBody):
            _inline_agent(checks, (*base, "step"), step.step)
        if isinstance(step, LoopStep):
            continues = _loop(checks, base, step)
        elif isinstance(step, AgentStep):
            continues = _agent(checks, base, step)
        else:
            continue
        if not continues:
            continue
        if step_id in fallbacks:
            checks.report(
                Code.SCHEMA,
                (*base, "continue_as_new"),
                "a fallback step cannot continue as new: it runs in another step's place",
            )
            continue
        beside = [
            other
            for other in workflow.steps
            if other != step_id
            and other not in fallbacks
            and not upstream.is_upstream(other, step_id)
            and not upstream.is_upstream(step_id, other)
        ]
        if beside:
            names = ", ".join(beside)
            kind = step.type
            checks.report(
                Code.SCHEMA,
                (*base, "continue_as_new"),
                f"{'an' if kind == 'agent' else 'a'} {kind} that continues as new must run on its "
                f"own, with every other step before or after it, but {names} can run beside it; "
                f"list {'it' if len(beside) == 1 else 'them'} in this {kind}'s after, or this "
                f"{kind} in {'its' if len(beside) == 1 else 'their'} after",
            )


def _loop(checks: Checks, base: DocPath, step: LoopStep) -> bool:
    """The loop's own rules; whether it continues as new."""
    if step.continue_as_new is None:
        if step.max_iterations > MAX_LOOP_ITERATIONS:
            checks.report(
                Code.SCHEMA,
                (*base, "max_iterations"),
                f"max_iterations is at most {MAX_LOOP_ITERATIONS} in one execution; set "
                "continue_as_new: {after: N} to go on in new executions (up to "
                f"{MAX_CONTINUED_ITERATIONS:,} iterations)",
            )
        return False
    after = step.continue_as_new.after
    if after >= step.max_iterations:
        checks.report(
            Code.SCHEMA,
            (*base, "continue_as_new", "after"),
            f"after ({after}) must be less than max_iterations ({step.max_iterations}), "
            "else the loop never continues as new; lower it or drop continue_as_new",
        )
    return True


def _agent(checks: Checks, base: DocPath, step: AgentStep) -> bool:
    """The agent's own rules; whether it continues as new."""
    if step.continue_as_new is None:
        _turns_in_one_call(checks, base, step, inline=False)
        return False
    if not step.tools:
        checks.report(
            Code.SCHEMA,
            (*base, "continue_as_new"),
            "an agent without tools answers in one model call, so it never continues as new; "
            "give it tools or drop continue_as_new",
        )
    after = step.continue_as_new.after
    if after + 1 >= step.max_turns:
        checks.report(
            Code.SCHEMA,
            (*base, "continue_as_new", "after"),
            f"after ({after}) must be less than max_turns ({step.max_turns}) minus one: a "
            "segment takes its after turns and one more for its summary, and the next needs a "
            "turn left; raise max_turns or drop continue_as_new",
        )
    return True


def _inline_agent(checks: Checks, where: DocPath, body: AgentBody) -> None:
    if body.continue_as_new is not None:
        checks.report(
            Code.SCHEMA,
            (*where, "continue_as_new"),
            "only a top-level agent step can continue as new; an agent inside a map or loop "
            "cannot (give the loop continue_as_new instead, or make this agent a step of its own)",
        )
    _turns_in_one_call(checks, where, body, inline=True)


def _turns_in_one_call(checks: Checks, where: DocPath, body: AgentBody, *, inline: bool) -> None:
    if body.max_turns <= MAX_AGENT_TURNS:
        return
    if inline:
        fix = "an agent inside a map or loop takes all its turns in one call"
    else:
        fix = (
            "set continue_as_new: {after: N} to go on in new executions (up to "
            f"{MAX_CONTINUED_TURNS:,} turns)"
        )
    checks.report(
        Code.SCHEMA,
        (*where, "max_turns"),
        f"max_turns is at most {MAX_AGENT_TURNS} in one step function call; {fix}",
    )
