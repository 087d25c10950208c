"""The errors the REST API answers with. Each has an HTTP status and a stable `code`; the body is
`{"error": {"code": ..., "message": ...}}`, plus the details some errors carry (the problems of
an invalid input)."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


class BadRequestError(ApiError):
    status, code = 400, "bad_request"


class UnauthorizedError(ApiError):
    status, code = 401, "unauthorized"


class ForbiddenError(ApiError):
    status, code = 403, "forbidden"


class NotFoundError(ApiError):
    status, code = 404, "not_found"


class MethodNotAllowedError(ApiError):
    status, code = 405, "method_not_allowed"


class ConflictError(ApiError):
    status, code = 409, "conflict"


class LengthRequiredError(ApiError):
    status, code = 411, "length_required"


class PayloadTooLargeError(ApiError):
    status, code = 413, "payload_too_large"


class UnsupportedMediaTypeError(ApiError):
    status, code = 415, "unsupported_media_type"


class InternalError(ApiError):
    status, code = 500, "internal"


class UnavailableError(ApiError):
    status, code = 503, "unavailable"
