"""Rules of `continue_as_new` on loops (docs/workflow-format.md, "Continue-as-new").

A loop that continues as new ends its execution and starts the next segment of the run at that
loop, so the loop must be where the whole run is: every other step runs before it or after it,
never beside it (a step beside it would be cut off, or run again), and it is no fallback (which
runs in another step's place).
"""

from __future__ import annotations

from switchyard.diagnostics import Code
from switchyard.model import LoopStep
from switchyard.model.steps import MAX_CONTINUED_ITERATIONS, MAX_LOOP_ITERATIONS
from switchyard.source import DocPath
from switchyard.validate.context import Checks
from switchyard.validate.graph import Upstream


def check_continue_as_new(checks: Checks, upstream: Upstream) -> None:
    workflow = checks.workflow
    fallbacks = workflow.fallback_steps()
    for step_id, step in workflow.steps.items():
        if not isinstance(step, LoopStep):
            continue
        base: DocPath = ("steps", step_id)
        if step.continue_as_new is None:
            if step.max_iterations > MAX_LOOP_ITERATIONS:
                checks.report(
                    Code.SCHEMA,
                    (*base, "max_iterations"),
                    f"max_iterations is at most {MAX_LOOP_ITERATIONS} in one execution; set "
                    "continue_as_new: {after: N} to go on in new executions (up to "
                    f"{MAX_CONTINUED_ITERATIONS:,} iterations)",
                )
            continue
        after = step.continue_as_new.after
        if after >= step.max_iterations:
            checks.report(
                Code.SCHEMA,
                (*base, "continue_as_new", "after"),
                f"after ({after}) must be less than max_iterations ({step.max_iterations}), "
                "else the loop never continues as new; lower it or drop continue_as_new",
            )
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
            checks.report(
                Code.SCHEMA,
                (*base, "continue_as_new"),
                f"a loop that continues as new must run on its own, with every other step before "
                f"or after it, but {names} can run beside it; list "
                f"{'it' if len(beside) == 1 else 'them'} in this loop's after, or this loop in "
                f"{'its' if len(beside) == 1 else 'their'} after",
            )
