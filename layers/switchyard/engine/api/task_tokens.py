"""Callbacks for `.waitForTaskToken` tasks: SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat.
Each goes through the coordinator, which answers TaskDoesNotExist for a token it does not hold
(unknown, or its task already closed) and TaskTimedOut for a token its task no longer waits on."""

from __future__ import annotations

from switchyard.engine import errors
from switchyard.engine.api import wire
from switchyard.engine.api.operation import ApiContext, Operation, Request, Response
from switchyard.engine.commands import Callback


def send_task_success(api: ApiContext, request: Request) -> Response:
    output = wire.json_member(request["output"], errors.InvalidOutput, "Output")
    api.engine.submit(Callback(request["taskToken"], "success", output=output))
    return {}


def send_task_failure(api: ApiContext, request: Request) -> Response:
    api.engine.submit(
        Callback(
            request["taskToken"],
            "failure",
            error=request.get("error") or "",
            cause=request.get("cause") or "",
        )
    )
    return {}


def send_task_heartbeat(api: ApiContext, request: Request) -> Response:
    api.engine.submit(Callback(request["taskToken"], "heartbeat"))
    return {}


OPERATIONS: dict[str, Operation] = {
    "SendTaskSuccess": send_task_success,
    "SendTaskFailure": send_task_failure,
    "SendTaskHeartbeat": send_task_heartbeat,
}
