"""Payloads of the render function's helpers: the small computations a JSONPath machine cannot
make on its own, for which the compiler emits a Task on `render` (inline on the local engine).

A request names its helper in `helper`; a request without one renders templates
(`RenderRequest`). Every helper is pure: no store, no network.

- `failure`: a caught `{Error, Cause}` as a failed step's record reads it: the plain message of
  the cause, and the attempt number the failing function reported.
- `deadline`: a time plus a number of seconds (a loop's or map's `timeout`).
- `check_output`: a composite step's output against its `output_schema` (`invalid_output`).
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
