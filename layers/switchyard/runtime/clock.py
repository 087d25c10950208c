"""Time, injectable: a real clock in production, a manual one in tests.

Rate-limit waits, deadlines and `max_duration` all read time through a `Clock`, so a test of a
60-second Retry-After takes microseconds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall time and real sleeps."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to, or when someone sleeps on it."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self._now += max(seconds, 0.0)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True, slots=True)
class Deadline:
    """The moment an attempt must have finished by (e.g. the Lambda's remaining time)."""

    at: float
    clock: Clock

    @classmethod
    def after(cls, seconds: float, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        return cls(clock.now() + seconds, clock)

    @classmethod
    def from_lambda_context(cls, context: object, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        """From a Lambda context's `get_remaining_time_in_millis()`."""
        remaining = context.get_remaining_time_in_millis()  # type: ignore[attr-defined]
        return cls(clock.now() + int(remaining) / 1000.0, clock)

    def remaining(self) -> float:
        return self.at - self.clock.now()


def utc_iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> float:
    """Seconds since the epoch of an ISO 8601 time (Step Functions writes `...Z`)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
