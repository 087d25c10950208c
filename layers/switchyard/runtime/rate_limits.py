"""Honour a provider's Retry-After across the account, not just in the call that got it.

When one call of `anthropic:claude-sonnet-4-5` is told "retry after 20 s", every other step
calling that model is told too: the "not before" time is kept per provider and model in a
`NotBeforeStore` (in memory by default; PostgreSQL, or any shared store, for many processes).
Before each call a `RateLimitGate` waits until that time — if the caller's deadline leaves room —
or fails fast with `rate_limit`, so the step's retry waits instead of burning a Lambda.
"""

from __future__ import annotations

import threading
from typing import Protocol

from psycopg_pool import ConnectionPool

from switchyard.contract.step_errors import RateLimitedError
from switchyard.runtime.clock import SYSTEM_CLOCK, Clock, Deadline


class NotBeforeStore(Protocol):
    def get(self, bucket: str) -> float | None:
        """Seconds since the epoch before which `bucket` must not be called, if any."""
        ...

    def push(self, bucket: str, not_before: float) -> None:
        """Move the bucket's time later (never earlier)."""
        ...


class InMemoryNotBeforeStore:
    def __init__(self) -> None:
        self._times: dict[str, float] = {}
        self._lock = threading.Lock()

    def get(self, bucket: str) -> float | None:
        with self._lock:
            return self._times.get(bucket)

    def push(self, bucket: str, not_before: float) -> None:
        with self._lock:
            self._times[bucket] = max(self._times.get(bucket, 0.0), not_before)


class PostgresNotBeforeStore:
    """Table `rate_limits`: shared by every process on the database."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def get(self, bucket: str) -> float | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT not_before FROM rate_limits WHERE bucket = %s", (bucket,)
            ).fetchone()
        return float(row[0]) if row else None

    def push(self, bucket: str, not_before: float) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO rate_limits (bucket, not_before) VALUES (%s, %s) "
                "ON CONFLICT (bucket) DO UPDATE "
                "SET not_before = GREATEST(rate_limits.not_before, EXCLUDED.not_before)",
                (bucket, not_before),
            )


class RateLimitGate:
    """Waits out a bucket's Retry-After before a call, within the caller's deadline."""

    def __init__(
        self,
        store: NotBeforeStore | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        margin: float = 1.0,
    ) -> None:
        self.store: NotBeforeStore = store or InMemoryNotBeforeStore()
        self.clock = clock
        self.margin = margin
        """Seconds kept free before the deadline for the call itself."""

    @staticmethod
    def bucket(provider: str, model: str) -> str:
        return f"{provider}:{model}"

    def wait(self, provider: str, model: str, deadline: Deadline | None = None) -> None:
        """Return when the bucket may be called; `RateLimitedError` if that is past the deadline."""
        bucket = self.bucket(provider, model)
        not_before = self.store.get(bucket)
        if not_before is None:
            return
        wait = not_before - self.clock.now()
        if wait <= 0:
            return
        if deadline is not None and self.clock.now() + wait + self.margin > deadline.at:
            raise RateLimitedError(
                f"{bucket} is rate limited for {wait:.1f}s more, past this attempt's deadline",
                retry_after=wait,
            )
        self.clock.sleep(wait)

    def record(self, provider: str, model: str, retry_after: float | None) -> None:
        """Remember a Retry-After that a call of the bucket received."""
        if retry_after is not None and retry_after > 0:
            self.store.push(self.bucket(provider, model), self.clock.now() + retry_after)
