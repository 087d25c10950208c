"""Retry policies become `Retry` rules (exponential and fixed backoff) or an explicit wait loop
(linear backoff, which `Retry` cannot express).

Errors whose call was never made and that clear with time (`throttled`: a quota used up for the
minute) get a rule of their own ahead of the policy's: at least `WAIT_OUT_RETRIES` retries,
exponential backoff with full jitter up to at least `WAIT_OUT_MAX_DELAY`, so that throttled runs
spread out and wait instead of spending their few retries within seconds."""

from __future__ import annotations

from typing import Any

from switchyard.contract.errors import ALL_ERRORS, WAITED_OUT, StepErrorName, error_names_for
from switchyard.model import ErrorType, RetryPolicy, SideEffect

WAIT_OUT_RETRIES = 10
"""Retries of a `throttled` step, or the policy's own when it allows more."""
WAIT_OUT_MAX_DELAY = 60
"""Seconds: the longest wait between them, or the policy's `max_delay` when longer (a quota's
window is a minute)."""

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
    waited = [str(name) for name in WAITED_OUT]
    wait_out: list[dict[str, Any]] = []
    if names == [ALL_ERRORS] or set(waited) <= set(names):
        wait_out = [wait_out_rule(policy)]
        names = [name for name in names if name not in waited]
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
        return [{"ErrorEquals": list(NEVER_RETRIED), "MaxAttempts": 0}, *wait_out, rule]
    return [*wait_out, rule]


def wait_out_rule(policy: RetryPolicy) -> dict[str, Any]:
    """The `Retry` rule of errors that clear with time (see the module's doc)."""
    return {
        "ErrorEquals": [str(name) for name in WAITED_OUT],
        "IntervalSeconds": max(1, policy.base_delay),
        "MaxAttempts": max(policy.max_attempts - 1, WAIT_OUT_RETRIES),
        "BackoffRate": 2.0,
        "MaxDelaySeconds": max(policy.max_delay, WAIT_OUT_MAX_DELAY),
        "JitterStrategy": "FULL",
    }


def linear_delays(policy: RetryPolicy) -> list[int]:
    """Waits of a linear policy before each retry: min(base_delay * (n+1), max_delay)."""
    return policy.delays()
