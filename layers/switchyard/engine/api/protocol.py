"""The AWS JSON 1.0 protocol of Step Functions, apart from any HTTP server: a call is the
`X-Amz-Target` header (`AWSStepFunctions.<Operation>`) and a JSON body of camelCase members; the
answer is a status and a JSON body, `{"__type": "<ErrorCode>", "message": ...}` for an error, from
which botocore raises the matching exception (`client.exceptions.ExecutionDoesNotExist`)."""

from __future__ import annotations

import logging

import psycopg

from switchyard.engine.api import executions, state_machines, task_tokens, versions, wire
from switchyard.engine.api.errors import (
    ConflictException,
    InternalFailure,
    SerializationException,
    UnknownOperationException,
)
from switchyard.engine.api.operation import ApiContext, Operation, Request
from switchyard.engine.api.shapes import check_request
from switchyard.engine.engine import Engine
from switchyard.engine.errors import EngineError
from switchyard.serving.jsontext import UnholdableJsonError, loads_bounded

log = logging.getLogger(__name__)

TARGET_PREFIX = "AWSStepFunctions."
CONTENT_TYPE = "application/x-amz-json-1.0"

OPERATIONS: dict[str, Operation] = {
    **state_machines.OPERATIONS,
    **versions.OPERATIONS,
    **executions.OPERATIONS,
    **task_tokens.OPERATIONS,
}


class SfnApi:
    """Answers Step Functions API calls from one engine; safe to call from many threads."""

    def __init__(self, engine: Engine) -> None:
        self.context = ApiContext(engine)

    def call(self, target: str, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, JSON body) for one call."""
        try:
            operation = _operation(target)
            request = _request(body)
            check_request(operation, request)
            return 200, wire.encode(OPERATIONS[operation](self.context, request))
        except EngineError as error:
            return error.status, _error(error.code, error.message)
        except psycopg.errors.UniqueViolation:  # two calls raced to create the same resource
            return 400, _error(
                ConflictException.code, "A concurrent request changed the same resource; retry"
            )
        except TimeoutError:
            return 500, _error(InternalFailure.code, "The engine did not answer in time")
        except Exception:
            log.exception("Step Functions API call %s failed", target)
            return 500, _error(InternalFailure.code, "The local engine failed to serve the call")


def _operation(target: str) -> str:
    operation = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else ""
    if operation not in OPERATIONS:
        raise UnknownOperationException(
            f"Operation '{target}' is not supported by switchyard's Step Functions endpoint"
        )
    return operation


def _request(body: bytes) -> Request:
    if not body.strip():
        return {}
    try:
        request = loads_bounded(body)
    except UnholdableJsonError as exc:
        raise SerializationException(f"The request body is not JSON: {exc}") from None
    if not isinstance(request, dict):
        raise SerializationException("The request body must be a JSON object")
    return request


def _error(code: str, message: str) -> bytes:
    return wire.encode({"__type": code, "message": message})
