"""Payloads of the render function's helpers: the small computations a JSONPath machine cannot
make on its own, for which the compiler emits a Task on `render` (inline on the local engine).

A request names its helper in `helper`; a request without one renders templates
(`RenderRequest`). Every helper is pure: no store, no network.

- `failure`: a caught `{Error, Cause}` as a failed step's record reads it: the plain message of
  the cause, and the attempt number the failing function reported.
- `deadline`: a time plus a number of seconds (a loop's or map's `timeout`).
- `check_output`: a composite step's output against its `output_schema` (`invalid_output`).
- `caught`: the shared failure handling of a block of states (see docs/compiler.md): which step
  a `Catch` wrote its error for, that error read as `failure` reads it, the step's failed record,
  its dead letter and what comes next. It returns the whole state, changed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from switchyard.contract.payloads import Wire


class FailureRequest(Wire):
    helper: Literal["failure"]
    error: dict[str, Any]
    """What a `Catch` wrote: Step Functions' `{Error, Cause}`."""


class FailureResult(Wire):
    """The error again, its `Cause` made the plain message."""

    Error: str
    Cause: str
    attempts: int | None = None
    """The attempt number the failing function reported; None when it reported none (a Task's
    `TimeoutSeconds`, the Lambda service, a gate, a child execution)."""


class DeadlineRequest(Wire):
    helper: Literal["deadline"]
    start: str
    """An RFC 3339 time (`$$.State.EnteredTime`)."""
    seconds: int = Field(ge=0)


class DeadlineResult(Wire):
    at: str
    """`start` plus `seconds`, RFC 3339 in UTC with milliseconds, as `$$.State.EnteredTime`."""


class OutputCheckRequest(Wire):
    helper: Literal["check_output"]
    step_id: str
    value: Any = None
    output_schema: dict[str, Any]


class OutputCheckResult(Wire):
    valid: bool = True


TailAction = Literal["budget", "human", "stop", "fail", "continue", "pause", "fallback"]
"""What the shared tail does next: open a budget or human gate, fail the run at once (a budget
refused with `on_exceeded: fail`), or after the dead letter fail the run, go on, pause, or run the
fallback."""


class CaughtStep(Wire):
    """What the tail must know of one step that sends its failures to it (literal, per step)."""

    on_error: Literal["fail", "continue", "pause"] = "fail"
    fallback: bool = False
    on_exceeded: Literal["pause", "fail"] = "pause"
    on_timeout: Literal["reject", "fail", "approve"] | None = None
    """A human gate's: after its last tier's timeout, `reject` or `fail` the step."""
    reads: list[str] = Field(default_factory=list)
    """The step records its Task receives (`*`: all of them): the dead letter's `input.steps`."""
    scope: bool = False
    """Its Task receives `scope` (a loop's iteration, a map's item)."""
    parks: bool = True
    """`budget` and `human_required` open a gate. False for a map (its items open their own
    gates; an error out of the `Map` is a failure, whatever its name) and a sub-workflow."""


class CaughtRequest(Wire):
    helper: Literal["caught"]
    state: dict[str, Any]
    """The whole state, in which a `Catch` wrote `{Error, Cause}` as the record of the failed
    step (`$.steps.<id>`)."""
    workflow: dict[str, Any]
    """`{name, version}`, for the dead letter."""
    steps: dict[str, CaughtStep]


class CaughtError(Wire):
    """`$.error` after the `caught` helper."""

    Error: str
    Cause: str
    attempts: int | None = None
    step: str
    action: TailAction
    context: dict[str, Any]
    """The gate's `context`: `run`, and `scope` when the step has one."""
    gate: dict[str, Any]
    """The gate's `error`: `{Error, Cause}` as caught (budget, human), or read (pause)."""
    letter: dict[str, Any] | None = None
    """The `DeadLetter` message body, for a step that failed for good."""
