"""What the dashboard's data API refuses, with a message a person can act on."""

from __future__ import annotations


class DashboardError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class BadQueryError(DashboardError):
    pass


class NotFoundError(DashboardError):
    status = 404
    code = "not_found"


class ConflictError(DashboardError):
    status = 409
    code = "conflict"


class ForbiddenError(DashboardError):
    status = 403
    code = "forbidden"


class UnavailableError(DashboardError):
    status = 503
    code = "unavailable"
