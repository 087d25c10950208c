"""Step Functions error names: what a function raises, what `Retry` and `Catch` match.

A Lambda function fails a Task with an `errorType`; Step Functions uses it as the error name. Our
functions raise exactly the workflow format's error types (`rate_limit`, `transient`, ...), so a
record's `error.type` reads like the format. Step Functions' own names are mapped back by
`error_type_of`.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

from switchyard.model import ErrorType


class StepErrorName(StrEnum):
    """Error names raised by switchyard's functions (the `errorType` of a failed invocation)."""

    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    TRANSIENT = "transient"
    INVALID_OUTPUT = "invalid_output"
    TEMPLATE = "template"
    REJECTED = "rejected"
    BUDGET = "budget"
    POLICY = "policy"
    PERMANENT = "permanent"
    HUMAN_REQUIRED = "human_required"
    """The step needs a person before it can go on: a tool call to approve, a loop to judge, a
    non-idempotent call whose outcome is unknown. The machine parks in a gate, then runs the step
    again; the runtime picks up the decision."""
    INVALID_INPUT = "invalid_input"
    """The run's input does not match the workflow's `inputs` (raised by run_start)."""
    THROTTLED = "throttled"
    """A model call did not fit its tenant's quota (tokens or requests per minute) and was not
    made; of type `transient`, and waited out by the machine's `Retry`."""
    CIRCUIT_OPEN = "circuit_open"
    """A tool call was refused without being made: the circuit breaker of its host or tool is
    open after recent failures; of type `transient`, and waited out like `throttled`."""


WAITED_OUT: tuple[StepErrorName, ...] = (StepErrorName.THROTTLED, StepErrorName.CIRCUIT_OPEN)
"""Transient errors whose call was never made and that clear with time, not with another try at
once: the compiler gives them a `Retry` rule of their own, with more attempts (compile/retry.py)."""


TASK_TIMEOUT = "States.Timeout"
HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
ALL_ERRORS = "States.ALL"
TASK_FAILED = "States.TaskFailed"

BRANCH_FAILED = "switchyard.branch_failed:"
"""The error a Parallel branch fails with when the one step of it that can fail does (with
`on_error: fail`): `BRANCH_FAILED<step id>`, its Cause the step's caught `{Error, Cause}` as JSON
text. The Parallel's `Catch` hands it to the failure tail outside the branch, which unwraps it
(`unwrap_branch_failure`)."""

LAMBDA_SERVICE_ERRORS: tuple[str, ...] = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.Unknown",
)
"""Failures of the Lambda service itself, not of our code: always transient."""

_THROTTLED = ("Lambda.TooManyRequestsException",)
_SANDBOX_TIMEOUT = ("Sandbox.Timedout",)


def error_names_for(error_type: ErrorType) -> list[str]:
    """Every Step Functions error name that counts as `error_type` (for `ErrorEquals`)."""
    names = [str(StepErrorName(str(error_type)))]
    if error_type is ErrorType.TIMEOUT:
        names += [TASK_TIMEOUT, HEARTBEAT_TIMEOUT, *_SANDBOX_TIMEOUT]
    elif error_type is ErrorType.RATE_LIMIT:
        names += list(_THROTTLED)
    elif error_type is ErrorType.TRANSIENT:
        names += [*map(str, WAITED_OUT), *LAMBDA_SERVICE_ERRORS]
    return names


def error_type_of(name: str) -> str:
    """The workflow error type for a Step Functions error name (unknown names: `permanent`)."""
    for error_type in ErrorType:
        if name in error_names_for(error_type):
            return str(error_type)
    if name in (StepErrorName.HUMAN_REQUIRED, StepErrorName.INVALID_INPUT):
        return name
    return str(ErrorType.PERMANENT)


_LAMBDA_ERROR_CLASSES: dict[str, type[Exception]] = {}


def lambda_error(name: str, message: str) -> Exception:
    """An exception that AWS Lambda reports with `errorType` `name`.

    Lambda's Python runtime names a failed invocation's error after the exception's class, and
    Step Functions matches `Retry`/`Catch` rules on that name; so the class is named `name`.
    """
    cls = _LAMBDA_ERROR_CLASSES.get(name)
    if cls is None:
        cls = type(name, (Exception,), {"__module__": "switchyard"})
        _LAMBDA_ERROR_CLASSES[name] = cls
    return cls(message)


def branch_failure(step_id: str) -> str:
    return f"{BRANCH_FAILED}{step_id}"


def unwrap_branch_failure(caught: dict[str, Any]) -> dict[str, Any]:
    """The step's own `{Error, Cause}` out of its branch's failure; anything else as it is.

    Should Step Functions have cut the JSON text at its limit of 32,768 characters, the error
    name still leads it, and the text is kept as the cause."""
    name = caught.get("Error")
    if not isinstance(name, str) or not name.startswith(BRANCH_FAILED):
        return caught
    text = caught.get("Cause")
    text = text if isinstance(text, str) else ""
    try:
        inner = json.loads(text)
    except ValueError:
        match = _LEADING_ERROR.match(text)
        return {"Error": json.loads(f'"{match.group(1)}"') if match else name, "Cause": text}
    if not isinstance(inner, dict):
        return {"Error": name, "Cause": text}
    return {"Error": inner.get("Error"), "Cause": inner.get("Cause")}


_LEADING_ERROR = re.compile(r'^\{\s*"Error"\s*:\s*"((?:[^"\\]|\\.)*)"')


def read_cause(cause: object) -> tuple[str, int | None]:
    """The plain message of a Step Functions `Cause`, and the attempt number the failing
    function reported with it (None when it reported none).

    A Cause comes in many shapes, and every one must read: Lambda's error JSON
    `{"errorType", "errorMessage", ...}` whose `errorMessage` is our functions' JSON
    `{"type", "message", "attempts", ...}` (or a `HumanRequest`, whose text is its `reason`, or
    plain text from an unexpected exception); a human gate's rejection `{"reviewer", "note"}`; a
    failed child execution's `{"Error", "Cause"}`; or plain text (`States.Timeout`, the
    machine's own Pass and Fail states). Anything else is returned as it came, as text.
    """
    if cause is None:
        return "", None
    detail = _unwrapped(cause)
    if not isinstance(detail, dict):
        return (detail if isinstance(detail, str) else json.dumps(detail)), None
    attempts = detail.get("attempts")
    reported = attempts if isinstance(attempts, int) and attempts > 0 else None
    for key in ("message", "reason"):
        if isinstance(detail.get(key), str):
            return detail[key], reported
    if "reviewer" in detail:
        note = detail.get("note")
        by = f" by {detail['reviewer']}" if detail.get("reviewer") else ""
        return f"rejected{by}" + (f": {note}" if note else ""), None
    if "Cause" in detail or "Error" in detail:  # a failed child execution
        message, _ = read_cause(detail.get("Cause"))
        return message or str(detail.get("Error") or ""), None
    return json.dumps(detail, ensure_ascii=False), reported


def read_spend(cause: object) -> dict[str, Any] | None:
    """What a failed attempt of an agent or router spent on models, as its function reported it
    in the error's cause: `{cost_usd, usage, attempts}`; None when it reported nothing."""
    detail = _unwrapped(cause)
    if not isinstance(detail, dict) or not isinstance(detail.get("cost_usd"), int | float):
        return None
    usage = detail.get("usage")
    return {
        "cost_usd": detail["cost_usd"],
        "usage": usage if isinstance(usage, dict) else {},
        "attempts": detail.get("attempts"),
    }


def _unwrapped(cause: object) -> Any:
    """A Cause as data: Lambda's error JSON opened, and its `errorMessage` (our functions'
    cause JSON) opened in turn."""
    detail: Any = _json_or_text(cause) if isinstance(cause, str) else cause
    if isinstance(detail, dict) and isinstance(detail.get("errorMessage"), str):
        detail = _json_or_text(detail["errorMessage"])
    return detail


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
