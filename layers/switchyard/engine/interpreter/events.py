"""History events with Step Functions' types and detail shapes (GetExecutionHistory)."""

from __future__ import annotations

import json
from typing import Any

MAX_EVENTS = 25_000
"""Step Functions fails an execution whose history would pass this many events."""
MAX_PAYLOAD_BYTES = 256 * 1024

_DETAILS_KEY = {
    "ExecutionStarted": "executionStartedEventDetails",
    "ExecutionSucceeded": "executionSucceededEventDetails",
    "ExecutionFailed": "executionFailedEventDetails",
    "ExecutionAborted": "executionAbortedEventDetails",
    "ExecutionTimedOut": "executionTimedOutEventDetails",
    "ExecutionRedriven": "executionRedrivenEventDetails",
    "TaskScheduled": "taskScheduledEventDetails",
    "TaskStarted": "taskStartedEventDetails",
    "TaskSubmitted": "taskSubmittedEventDetails",
    "TaskSucceeded": "taskSucceededEventDetails",
    "TaskFailed": "taskFailedEventDetails",
    "TaskTimedOut": "taskTimedOutEventDetails",
    "TaskStartFailed": "taskStartFailedEventDetails",
    "TaskSubmitFailed": "taskSubmitFailedEventDetails",
    "LambdaFunctionScheduled": "lambdaFunctionScheduledEventDetails",
    "LambdaFunctionSucceeded": "lambdaFunctionSucceededEventDetails",
    "LambdaFunctionFailed": "lambdaFunctionFailedEventDetails",
    "LambdaFunctionTimedOut": "lambdaFunctionTimedOutEventDetails",
    "MapStateStarted": "mapStateStartedEventDetails",
    "MapIterationStarted": "mapIterationStartedEventDetails",
    "MapIterationSucceeded": "mapIterationSucceededEventDetails",
    "MapIterationFailed": "mapIterationFailedEventDetails",
    "MapIterationAborted": "mapIterationAbortedEventDetails",
}


def to_text(value: Any) -> str:
    """JSON as Step Functions writes it into events and outputs (compact, UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def details(event_type: str, **fields: Any) -> dict[str, Any]:
    """`{"<...>EventDetails": fields}` for the event type, or the state entered/exited shape."""
    if event_type.endswith("StateEntered"):
        return {"stateEnteredEventDetails": fields}
    if event_type.endswith("StateExited"):
        return {"stateExitedEventDetails": fields}
    key = _DETAILS_KEY.get(event_type)
    return {key: fields} if key and fields else {}


def state_entered(state_type: str, name: str, state_input: Any) -> tuple[str, dict[str, Any]]:
    event_type = f"{state_type}StateEntered"
    text = to_text(state_input)
    return event_type, details(event_type, name=name, input=text, inputDetails={"truncated": False})


def state_exited(state_type: str, name: str, output: Any) -> tuple[str, dict[str, Any]]:
    event_type = f"{state_type}StateExited"
    text = to_text(output)
    return event_type, details(
        event_type, name=name, output=text, outputDetails={"truncated": False}
    )


def resource_parts(resource: str) -> tuple[str, str]:
    """(service, action): `("lambda", "invoke")` for `arn:aws:states:::lambda:invoke`."""
    if resource.startswith("arn:aws:states:::"):
        service, _, action = resource[len("arn:aws:states:::") :].partition(":")
        return service, action
    if ":lambda:" in resource and ":function:" in resource:
        return "lambda", resource
    return "unknown", resource


def size_of(value: Any) -> int:
    return len(to_text(value).encode())
