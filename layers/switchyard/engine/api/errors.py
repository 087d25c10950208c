"""Error codes the API answers with that the engine itself never raises. Each is an `EngineError`,
so the protocol renders every error the same way: HTTP status and `{"__type", "message"}`."""

from __future__ import annotations

from switchyard.engine.errors import EngineError


def _error(code: str, status: int = 400) -> type[EngineError]:
    return type(code, (EngineError,), {"code": code, "status": status})


ConflictException = _error("ConflictException")
MissingRequiredParameter = _error("MissingRequiredParameter")
StateMachineTypeNotSupported = _error("StateMachineTypeNotSupported")
SerializationException = _error("SerializationException")
UnknownOperationException = _error("UnknownOperationException")
InternalFailure = _error("InternalFailure", 500)
RequestEntityTooLargeException = _error("RequestEntityTooLargeException", 413)
# SigV4 refusals, as AWS words them (`switchyard.engine.api.sigv4`)
MissingAuthenticationTokenException = _error("MissingAuthenticationTokenException", 403)
UnrecognizedClientException = _error("UnrecognizedClientException")
InvalidSignatureException = _error("InvalidSignatureException")
