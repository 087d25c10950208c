"""Retry and Catch: decide what a failed state does next, as an explicit outcome.

`handle_failure` never sleeps and never raises: it returns `RetryAfter` (wait, then run the state
again), `CatchTo` (go to a catcher's `Next` with the error merged into the input) or `Unhandled`
(the state, and so its branch or execution, fails). The interpreter keeps one attempt counter per
retrier, for the current visit of the state, and turns `RetryAfter` into a durable timer.

Matching rules (Step Functions):
- `States.ALL` matches every error name; `States.TaskFailed` matches every error name except
  `States.Timeout`;
- `States.Runtime` is terminal: no retrier or catcher ever sees it; `States.DataLimitExceeded`
  only matches where it is named explicitly (`States.ALL` and `States.TaskFailed` skip it);
- only the first retrier whose `ErrorEquals` matches applies; when its attempts are used up, the
  catchers are tried.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from switchyard.engine.asl.errors import StatesError
from switchyard.engine.asl.jsonpath import ReferencePath, compile_reference_path

DEFAULT_INTERVAL_SECONDS = 1
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_RATE = 2.0
_WILDCARD_BLIND = frozenset({StatesError.RUNTIME.value, StatesError.DATA_LIMIT_EXCEEDED.value})


class JitterStrategy(StrEnum):
    FULL = "FULL"
    NONE = "NONE"


@dataclass(frozen=True, slots=True)
class Retrier:
    error_equals: tuple[str, ...]
    interval_seconds: int = DEFAULT_INTERVAL_SECONDS
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_rate: float = DEFAULT_BACKOFF_RATE
    max_delay_seconds: int | None = None
    jitter_strategy: JitterStrategy = JitterStrategy.NONE

    def delay(self, retries_done: int, rng: random.Random) -> float:
        """Seconds to wait before retry number `retries_done + 1`."""
        delay = self.interval_seconds * self.backoff_rate**retries_done
        if self.max_delay_seconds is not None:
            delay = min(delay, float(self.max_delay_seconds))
        if self.jitter_strategy is JitterStrategy.FULL:
            delay = rng.uniform(0.0, delay)
        return delay


_ROOT = compile_reference_path("$")


@dataclass(frozen=True, slots=True)
class Catcher:
    error_equals: tuple[str, ...]
    next: str
    result_path: ReferencePath | None = _ROOT
    """Where the error output goes in the state's input (`None`: discard it)."""


@dataclass(frozen=True, slots=True)
class RetryAfter:
    """Run the state again after `seconds`; `retrier` is the index whose counter to increment."""

    seconds: float
    retrier: int
    attempt: int
    """The number of this retry (1 for the first retry)."""


@dataclass(frozen=True, slots=True)
class CatchTo:
    """Go to `next_state`; apply `result_path` to merge `error_output` into the state input."""

    next_state: str
    result_path: ReferencePath | None
    error_output: dict[str, Any]
    catcher: int


@dataclass(frozen=True, slots=True)
class Unhandled:
    error: str
    cause: str


FailureOutcome = RetryAfter | CatchTo | Unhandled


def error_matches(error_equals: Sequence[str], error: str) -> bool:
    """Whether an `ErrorEquals` list matches the error name `error`."""
    if error == StatesError.RUNTIME:
        return False
    for name in error_equals:
        if name == error:
            return True
        if error in _WILDCARD_BLIND:
            continue
        if name == StatesError.ALL:
            return True
        if name == StatesError.TASK_FAILED and error != StatesError.TIMEOUT:
            return True
    return False


def handle_failure(
    error: str,
    cause: str,
    retriers: Sequence[Retrier],
    catchers: Sequence[Catcher],
    retries_done: Sequence[int],
    rng: random.Random | None = None,
) -> FailureOutcome:
    """What a state that failed with `error`/`cause` does next.

    `retries_done[i]` is how many times retrier `i` has already retried during this visit of the
    state (missing entries count as 0).
    """
    for index, retrier in enumerate(retriers):
        if error_matches(retrier.error_equals, error):
            done = retries_done[index] if index < len(retries_done) else 0
            if done < retrier.max_attempts:
                seconds = retrier.delay(done, rng if rng is not None else random.Random())
                return RetryAfter(seconds, index, done + 1)
            break
    for index, catcher in enumerate(catchers):
        if error_matches(catcher.error_equals, error):
            return CatchTo(
                catcher.next, catcher.result_path, {"Error": error, "Cause": cause}, index
            )
    return Unhandled(error, cause)
