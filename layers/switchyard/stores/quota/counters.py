"""Quota counters: how much of a per-minute quota was used, taken atomically, all or nothing.

A counter (`<tenant>:<model>:tokens`, `<tenant>:<model>:requests`) counts per window of one
minute (UTC, aligned to the epoch). What the last 60 seconds used is estimated as a sliding
window: the current window's count plus the previous window's, weighted by how much of the
previous window the last 60 seconds still cover:

    used = current + ceil(previous * (1 - elapsed / 60))

A take of `amount` fits when `used + amount <= admit_up_to`. The previous window no longer
grows (takes land in the current one), so the condition comes down to one number the store
can check atomically on the current window's counter: `current <= admit_up_to - amount -
weighted previous`. `admit_up_to` is the quota itself for the highest priority and a share of it
for the others, so a full quota still has room for urgent calls (runtime/quotas.py).

Takes are not idempotent by an id (a repeated invocation takes again): a duplicate can only make
the counters stricter, never let calls past the quota. `adjust` corrects a take to the truth
afterwards (a call that used fewer tokens than it reserved gives the rest back).
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from switchyard.contract.step_errors import ThrottledError

WINDOW_SECONDS = 60


def window_of(now: float) -> int:
    """The start of the window `now` falls in, in seconds since the epoch."""
    return int(now // WINDOW_SECONDS) * WINDOW_SECONDS


@dataclass(frozen=True, slots=True)
class QuotaTake:
    """What one call takes of one counter, and the limits it must stay within."""

    counter: str
    amount: int
    limit: int
    """The quota: at most this much per minute."""
    admit_up_to: int
    """What this take may fill the last minute up to: `limit` for the highest priority, a
    share of it for the others."""


@dataclass(frozen=True, slots=True)
class QuotaGrant:
    """Takes that fitted, in the window they were counted in."""

    window: int
    takes: tuple[QuotaTake, ...]


@dataclass(frozen=True, slots=True)
class QuotaUsage:
    window: int
    current: int
    previous: int
    now: float

    @property
    def weighted_previous(self) -> int:
        """What of the previous window the last 60 seconds still cover (rounded up)."""
        elapsed = (self.now - self.window) / WINDOW_SECONDS
        return math.ceil(self.previous * max(0.0, 1.0 - elapsed))

    @property
    def last_minute(self) -> int:
        return self.current + self.weighted_previous

    def threshold(self, take: QuotaTake) -> int:
        """The highest current count at which `take` still fits."""
        return take.admit_up_to - take.amount - self.weighted_previous

    def retry_after(self, take: QuotaTake) -> float:
        """Seconds until `take` would fit if nothing else were taken meanwhile."""
        room = take.admit_up_to - take.amount
        end = self.window + WINDOW_SECONDS
        if room < 0:
            return float(WINDOW_SECONDS)  # never fits: the runtime refuses these before
        if self.current <= room:  # fits once the previous window has faded enough
            fade = 1.0 - (room - self.current) / self.previous if self.previous else 0.0
            return max(0.0, self.window + fade * WINDOW_SECONDS - self.now)
        # Fits in the next window, once this window's count has faded enough.
        fade = 1.0 - room / self.current
        return max(0.0, end + fade * WINDOW_SECONDS - self.now)


def refused(take: QuotaTake, usage: QuotaUsage) -> ThrottledError:
    """The error of a take that does not fit, with the numbers an operator needs."""
    share = (
        f" ({take.admit_up_to} of them open to this call's priority)"
        if take.admit_up_to < take.limit
        else ""
    )
    wait = usage.retry_after(take)
    return ThrottledError(
        f"quota {take.counter} is used up for now: {usage.last_minute} of {take.limit} per "
        f"minute used{share}, and this call needs {take.amount}; it was not made, and is "
        f"retried after a backoff (it would fit in about {math.ceil(wait)}s)",
        quota=take.counter,
        retry_after=wait,
    )


class QuotaStore(ABC):
    """Per-minute counters, shared by every process; backends: DynamoDB and PostgreSQL."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    @abstractmethod
    def take(self, takes: Sequence[QuotaTake]) -> QuotaGrant:
        """Count every take in the current window, or none (raises `ThrottledError` naming
        the first counter, in counter order, that it does not fit)."""

    @abstractmethod
    def adjust(self, grant: QuotaGrant, counter: str, delta: int) -> None:
        """Add `delta` (negative: give back) to `counter` in the grant's window."""

    @abstractmethod
    def usage(self, counter: str) -> QuotaUsage:
        """The counter's current and previous windows, now."""


def ordered(takes: Sequence[QuotaTake]) -> list[QuotaTake]:
    """Takes in one global order, one per counter (two transactions lock in the same order)."""
    seen: dict[str, QuotaTake] = {}
    for take in takes:
        seen.setdefault(take.counter, take)
    return [seen[counter] for counter in sorted(seen)]
