"""What maps and loops add around their inline step: a deadline for their `timeout`, checked
before each iteration or item starts, and a check of their output against `output_schema`.

JSONPath has no date arithmetic, so the deadline (the time the map or loop started plus its
`timeout`) is computed by the render function's `deadline` helper and kept in `$.deadline`; a
Choice compares `$$.State.EnteredTime` with it, which Step Functions and the local engine both
evaluate natively. Checking a JSON Schema is the `check_output` helper's work.
"""

from __future__ import annotations

from typing import Any

from switchyard.compile.fragments import State
from switchyard.compile.steps.unit import LAMBDA_INVOKE, LAMBDA_SERVICE_RETRY, Unit, function
from switchyard.contract import FunctionName, StepErrorName

DEADLINE = "$.deadline"
"""Scratch key: `{at}`, when a map or loop with a `timeout` must stop starting work."""


def deadline_task(seconds: int) -> State:
    """Computes `$.deadline.at`: now (this state's entered time) plus `seconds`."""
    return {
        "Type": "Task",
        "Comment": f"the time this step must be done by: {seconds} s from now",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {
            "FunctionName": function(FunctionName.RENDER),
            "Payload": {
                "helper": "deadline",
                "start.$": "$$.State.EnteredTime",
                "seconds": seconds,
            },
        },
        "ResultSelector": {"at.$": "$.Payload.at"},
        "ResultPath": DEADLINE,
        "Retry": [LAMBDA_SERVICE_RETRY],
    }


def past(deadline: str) -> dict[str, Any]:
    """A Choice rule: the state is entered at or after the time at `deadline`."""
    return {"Variable": "$$.State.EnteredTime", "TimestampGreaterThanEqualsPath": deadline}


def timed_out_error(cause: dict[str, Any]) -> State:
    """A Pass that sets `$.error` as a `Catch` would for a `timeout` error with `cause`."""
    return {
        "Type": "Pass",
        "Parameters": {"Error": StepErrorName.TIMEOUT.value, **cause},
        "ResultPath": "$.error",
    }


def output_check(unit: Unit, schema: dict[str, Any]) -> State:
    """Checks the step's recorded output against `schema`; `invalid_output` when it does not
    match (parts of it moved to the output store are not checked)."""
    return {
        "Type": "Task",
        "Comment": f"checks the output of '{unit.step_id}' against its output_schema",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {
            "FunctionName": function(FunctionName.RENDER),
            "Payload": {
                "helper": "check_output",
                "step_id": unit.step_id,
                "value.$": f"{unit.step_record}.output",
                "output_schema": schema,
            },
        },
        "ResultPath": None,
        "Retry": [LAMBDA_SERVICE_RETRY],
    }
