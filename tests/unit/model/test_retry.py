from __future__ import annotations

import pytest
from pydantic import ValidationError

from switchyard.model import ErrorType, RetryPolicy


def test_defaults_match_the_format() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.backoff, policy.base_delay, policy.max_delay) == (
        3,
        "exponential",
        2,
        60,
    )
    assert policy.jitter == "full"
    assert policy.retried_errors() == [ErrorType.TIMEOUT, ErrorType.RATE_LIMIT, ErrorType.TRANSIENT]


@pytest.mark.parametrize(
    ("backoff", "delays"),
    [
        ("exponential", [2, 4, 8, 16, 20]),
        ("linear", [2, 4, 6, 8, 10]),
        ("fixed", [2, 2, 2, 2, 2]),
    ],
)
def test_delays_follow_the_formula(backoff: str, delays: list[int]) -> None:
    policy = RetryPolicy(max_attempts=6, backoff=backoff, base_delay=2, max_delay=20)  # type: ignore[arg-type]
    assert policy.delays() == delays


def test_all_retries_everything() -> None:
    assert RetryPolicy(on=["all"]).retried_errors() == list(ErrorType)


def test_max_delay_below_base_delay_is_refused() -> None:
    with pytest.raises(ValidationError):
        RetryPolicy(base_delay=10, max_delay=5)
