"""Continue-as-new: what one segment of a run hands the next, and what it ends with.

A loop with `continue_as_new` starts a new execution of its own state machine every `after`
iterations (Step Functions' `states:startExecution`, fire-and-forget) with the input
`{CONTINUE_KEY: Continuation}`, and its execution then succeeds with the output
`{CONTINUED_KEY: ContinuedTo}`. The run records read both (records/projection.py): the new
execution is the next segment of the same logical run, the old one's record says `continued`.
"""

from __future__ import annotations

from typing import Any

from switchyard.contract.payloads import RunContext, Wire

CONTINUE_KEY = "switchyard:continue"
"""The key of a continued segment's input (not a workflow input: names cannot hold a colon)."""
CONTINUED_KEY = "switchyard:continued"
"""The key of the output of a segment that handed its run on to the next."""


class Continuation(Wire):
    """What a segment carries to the next: the run, its state, and where the loop stands."""

    loop: str
    """The loop step that goes on."""
    segment: int
    """The new segment's number (2 for the first continuation)."""
    continued_from: str
    """The execution name of the segment that started this one."""
    run: RunContext
    """The logical run: the first segment's identity, kept."""
    inputs: dict[str, Any]
    steps: dict[str, Any]
    """The step records written so far."""
    scope: dict[str, Any]
    """The loop's next iteration: `iteration`, `previous` (the summary), `meta`."""
    deadline: Any = None
    """The loop's deadline (its `timeout`), when it has one."""


class ContinuedTo(Wire):
    """The output of a segment that handed its run on."""

    run_id: str
    """The logical run's id (the first segment's execution name)."""
    segment: int
    """The next segment's number."""
    execution_arn: str
    """The next segment's execution."""


def continuation_of(data: Any) -> dict[str, Any] | None:
    """The raw continuation in an execution's input, if it is a continued segment."""
    if isinstance(data, dict) and isinstance(data.get(CONTINUE_KEY), dict):
        return data[CONTINUE_KEY]  # type: ignore[no-any-return]
    return None


def continued_to(output: Any) -> dict[str, Any] | None:
    """The raw hand-over in an execution's output, if the segment continued as new."""
    if isinstance(output, dict) and isinstance(output.get(CONTINUED_KEY), dict):
        return output[CONTINUED_KEY]  # type: ignore[no-any-return]
    return None
