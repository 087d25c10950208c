"""Retry policies become `Retry` rules (exponential and fixed backoff) or an explicit wait loop
(linear backoff, which `Retry` cannot express)."""

from __future__ import annotations

from typing import Any

from switchyard.contract.errors import ALL_ERRORS, StepErrorName, error_names_for
from switchyard.model import ErrorType, RetryPolicy, SideEffect

NEVER_RETRIED: tuple[str, ...] = (
    StepErrorName.BUDGET,
    StepErrorName.HUMAN_REQUIRED,
    StepErrorName.REJECTED,
)
"""Errors that a retry cannot fix: they go to a gate or the failure path at once."""


def retried_error_names(policy: RetryPolicy) -> list[str]:
    """The Step Functions error names that `policy` retries (`States.ALL` for `all`)."""
    if "all" in policy.on:
        return [ALL_ERRORS]
    names: list[str] = []
    for error in policy.retried_errors():
        if error in (ErrorType.BUDGET, ErrorType.REJECTED):
            continue
        names += error_names_for(error)
    return names


def retriers(policy: RetryPolicy, side_effect: SideEffect | None = None) -> list[dict[str, Any]]:
    """`Retry` rules for a Task. Empty for linear backoff (a wait loop does it) and for
    non-idempotent tools, which are never retried automatically."""
    if side_effect is SideEffect.NON_IDEMPOTENT or policy.backoff == "linear":
        return []
    if policy.max_attempts < 2:
        return []
    names = retried_error_names(policy)
    if not names:
        return []
    rule: dict[str, Any] = {
        "ErrorEquals": names,
        "IntervalSeconds": max(1, policy.base_delay),
        "MaxAttempts": policy.max_attempts - 1,
        "BackoffRate": 2.0 if policy.backoff == "exponential" else 1.0,
        "MaxDelaySeconds": max(1, policy.max_delay),
        "JitterStrategy": "FULL" if policy.jitter == "full" else "NONE",
    }
    if names == [ALL_ERRORS]:
        # States.ALL must come last; errors no retry can fix are excluded before it.
        return [{"ErrorEquals": list(NEVER_RETRIED), "MaxAttempts": 0}, rule]
    return [rule]


def linear_delays(policy: RetryPolicy) -> list[int]:
    """Waits of a linear policy before each retry: min(base_delay * (n+1), max_delay)."""
    return policy.delays()
