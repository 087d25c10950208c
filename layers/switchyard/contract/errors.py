"""Step Functions error names: what a function raises, what `Retry` and `Catch` match.

A Lambda function fails a Task with an `errorType`; Step Functions uses it as the error name. Our
functions raise exactly the workflow format's error types (`rate_limit`, `transient`, ...), so a
record's `error.type` reads like the format. Step Functions' own names are mapped back by
`error_type_of`.
"""

from __future__ import annotations

from enum import StrEnum

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


TASK_TIMEOUT = "States.Timeout"
HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
ALL_ERRORS = "States.ALL"
TASK_FAILED = "States.TaskFailed"

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
        names += list(LAMBDA_SERVICE_ERRORS)
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
