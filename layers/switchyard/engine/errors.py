"""Errors of the engine's API, named with Step Functions' error codes so clients see the same
exceptions from the local engine as from AWS (boto3 maps the code to its exception class)."""

from __future__ import annotations


class EngineError(Exception):
    """An API call that cannot be done; `code` is the Step Functions error code."""

    code = "ValidationException"
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _error(code: str, status: int = 400) -> type[EngineError]:
    return type(code, (EngineError,), {"code": code, "status": status})


StateMachineDoesNotExist = _error("StateMachineDoesNotExist")
StateMachineAlreadyExists = _error("StateMachineAlreadyExists")
StateMachineDeleting = _error("StateMachineDeleting")
InvalidDefinition = _error("InvalidDefinition")
InvalidArn = _error("InvalidArn")
InvalidName = _error("InvalidName")
InvalidExecutionInput = _error("InvalidExecutionInput")
InvalidToken = _error("InvalidToken")
InvalidOutput = _error("InvalidOutput")
ExecutionDoesNotExist = _error("ExecutionDoesNotExist")
ExecutionAlreadyExists = _error("ExecutionAlreadyExists")
ExecutionNotRedrivable = _error("ExecutionNotRedrivable")
TaskDoesNotExist = _error("TaskDoesNotExist")
TaskTimedOut = _error("TaskTimedOut")
ResourceNotFound = _error("ResourceNotFound")
ValidationException = _error("ValidationException")
ServiceUnavailable = _error("ServiceUnavailable", 503)
"""The engine cannot take commands now (another engine owns its database)."""
