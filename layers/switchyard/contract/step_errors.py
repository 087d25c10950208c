"""Errors of the step runtime: each leaves a function as one Step Functions error name.

A handler turns a `StepError` into a failed invocation whose `errorType` is `error.name` (see
`switchyard.contract.StepErrorName`), so the compiled machine's `Retry` and `Catch` rules match it.
Each class says whether a retry can help, and `RateLimitedError` carries how long to wait first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from switchyard.contract import HumanRequest, StepErrorName, Usage
from switchyard.contract.errors import lambda_error


@dataclass(frozen=True, slots=True)
class Spend:
    """What an attempt spent on models before it failed: the `cost_usd` and `usage` a result
    would have carried."""

    cost_usd: float
    usage: Usage


class StepError(Exception):
    """Base of every error a step leaves with; `name` is the Lambda `errorType`."""

    name: ClassVar[StepErrorName] = StepErrorName.PERMANENT
    retryable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.spent: Spend | None = None
        """Set by the step runner when the failed attempt had paid for model calls."""

    def cause(self) -> dict[str, Any]:
        """What the machine sees as the error's `Cause` (JSON in the Lambda error message)."""
        return {"type": str(self.name), "message": self.message}

    def to_lambda_error(self) -> dict[str, Any]:
        """The shape Lambda reports for an unhandled error: errorType and errorMessage."""
        return {"errorType": str(self.name), "errorMessage": json.dumps(self.cause())}

    def as_lambda_exception(self, *, attempt: int | None = None) -> Exception:
        """What a handler raises: Lambda names the `errorType` after the exception's class, so
        this is an exception whose class is named `self.name`, with the cause as its message.
        `attempt` (the attempt that failed) goes into the cause as `attempts`: a failed step's
        record reads it there, since Step Functions does not say how often a Task was tried.
        What the attempt spent goes in as `cost_usd` and `usage`, so that run totals count
        failed attempts too."""
        cause = self.cause()
        if attempt is not None:
            cause["attempts"] = attempt
        if self.spent is not None:
            cause["cost_usd"] = self.spent.cost_usd
            cause["usage"] = self.spent.usage.model_dump(mode="json")
        return lambda_error(str(self.name), json.dumps(cause))


class PermanentError(StepError):
    """Anything that another attempt will not fix: a 4xx, a bad configuration."""


class TransientError(StepError):
    """A failure another attempt may not meet: 5xx, overload, a dropped connection."""

    name = StepErrorName.TRANSIENT
    retryable = True


class ConcurrentUpdateError(TransientError):
    """Another attempt is updating the same record right now (a duplicate invocation of the step
    holds its idempotency record): a version conflict, counted as `VersionConflicts`."""


class StepTimeoutError(StepError):
    """The attempt ran out of time (its deadline, or a downstream timeout)."""

    name = StepErrorName.TIMEOUT
    retryable = True


class RateLimitedError(StepError):
    """A provider or endpoint said "too many requests"; retry no sooner than `retry_after`."""

    name = StepErrorName.RATE_LIMIT
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def cause(self) -> dict[str, Any]:
        out = super().cause()
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        return out


class ThrottledError(TransientError):
    """A model call would pass its tenant's quota (`quota` names the counter), so it was not
    made; retried by the machine after a backoff, as the quota frees up over the minute."""

    name = StepErrorName.THROTTLED

    def __init__(self, message: str, *, quota: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.quota = quota
        self.retry_after = retry_after
        """Seconds after which the call would fit, as far as the counters know now."""

    def cause(self) -> dict[str, Any]:
        out = super().cause()
        out["quota"] = self.quota
        if self.retry_after is not None:
            out["retry_after"] = round(self.retry_after, 1)
        return out


class CircuitOpenError(TransientError):
    """The circuit breaker of a tool or a host is open (`circuit` names it), so the call was
    not made; retried by the machine after a backoff, once the breaker lets probes through."""

    name = StepErrorName.CIRCUIT_OPEN

    def __init__(self, message: str, *, circuit: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.circuit = circuit
        self.retry_after = retry_after
        """Seconds until the breaker lets a probe call through."""

    def cause(self) -> dict[str, Any]:
        out = super().cause()
        out["circuit"] = self.circuit
        if self.retry_after is not None:
            out["retry_after"] = round(self.retry_after, 1)
        return out


class InvalidOutputError(StepError):
    """The output does not parse or does not match the step's `output_schema`."""

    name = StepErrorName.INVALID_OUTPUT

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []

    def cause(self) -> dict[str, Any]:
        out = super().cause()
        if self.errors:
            out["errors"] = self.errors
        return out


class TemplateRenderError(StepError):
    """A template names something the context lacks, or fails while rendering."""

    name = StepErrorName.TEMPLATE

    def __init__(
        self, message: str, *, template: str | None = None, location: str | None = None
    ) -> None:
        super().__init__(message)
        self.template = template
        self.location = location
        """Where the template is in the workflow (`outputs.summary`), when known."""

    def cause(self) -> dict[str, Any]:
        out = super().cause()
        if self.location is not None:
            out["location"] = self.location
        return out


class BudgetExceededError(StepError):
    """A reservation or a counter does not fit the budget of `scope`."""

    name = StepErrorName.BUDGET

    def __init__(
        self, message: str, *, scope: str | None = None, limit_micros: int | None = None
    ) -> None:
        super().__init__(message)
        self.scope = scope
        self.limit_micros = limit_micros
        """The money limit that refused (None: tokens, steps or time refused): what an operator
        raises before resuming."""

    def cause(self) -> dict[str, Any]:
        out = super().cause()
        if self.scope is not None:
            out["scope"] = self.scope
        if self.limit_micros is not None:
            out["limit_micros"] = self.limit_micros
        return out


class PolicyViolationError(StepError):
    """A tool call refused before it ran: not allowed, bad arguments, over a limit."""

    name = StepErrorName.POLICY

    def __init__(self, message: str, *, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


class RejectedError(StepError):
    """A person said no (to a tool call awaiting approval)."""

    name = StepErrorName.REJECTED


class HumanRequiredError(StepError):
    """The step needs a person first; the cause is a `HumanRequest` the gate shows them."""

    name = StepErrorName.HUMAN_REQUIRED

    def __init__(self, request: HumanRequest) -> None:
        super().__init__(request.reason)
        self.request = request

    def cause(self) -> dict[str, Any]:
        """Exactly the `HumanRequest`, as the contract says."""
        return self.request.model_dump(mode="json", exclude_none=True)
