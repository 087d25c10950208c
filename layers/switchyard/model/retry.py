"""Retry policies: how often and how long to wait before a failed step is tried again."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from switchyard.model.base import ErrorType, Spec
from switchyard.model.durations import Duration

DEFAULT_RETRY_ON: tuple[ErrorType, ...] = (
    ErrorType.TIMEOUT,
    ErrorType.RATE_LIMIT,
    ErrorType.TRANSIENT,
)


RetryOn = Literal[
    "timeout",
    "rate_limit",
    "transient",
    "invalid_output",
    "template",
    "rejected",
    "budget",
    "policy",
    "permanent",
    "all",
]


DEFAULT_RETRY_ON_NAMES: tuple[RetryOn, ...] = ("timeout", "rate_limit", "transient")


class RetryPolicy(Spec):
    """Total attempts and the wait between them."""

    max_attempts: int = Field(default=3, ge=1, le=100)
    """Total attempts including the first; 1 means no retry."""
    backoff: Literal["exponential", "linear", "fixed"] = "exponential"
    """exponential: min(base_delay * 2^n, max_delay); linear: min(base_delay * (n+1), max_delay)."""
    base_delay: Duration = 2
    max_delay: Duration = 60
    jitter: Literal["full", "none"] = "full"
    """full: a random wait in [0, delay]; none: exactly the delay."""
    on: list[RetryOn] = Field(default_factory=lambda: list(DEFAULT_RETRY_ON_NAMES))
    """Error types that are retried; `all` retries any error."""

    @model_validator(mode="after")
    def _delays_in_order(self) -> RetryPolicy:
        if self.max_delay < self.base_delay:
            raise ValueError("max_delay must not be shorter than base_delay")
        return self

    def retries(self, error: ErrorType) -> bool:
        return "all" in self.on or str(error) in self.on

    def retried_errors(self) -> list[ErrorType]:
        """The error types this policy retries, in the order of ErrorType."""
        return [error for error in ErrorType if self.retries(error)]

    def delays(self) -> list[int]:
        """The wait before each retry, in seconds, before jitter: one per retry."""
        waits: list[int] = []
        for n in range(self.max_attempts - 1):
            if self.backoff == "exponential":
                delay = self.base_delay * (2**n)
            elif self.backoff == "linear":
                delay = self.base_delay * (n + 1)
            else:
                delay = self.base_delay
            waits.append(min(delay, self.max_delay))
        return waits
