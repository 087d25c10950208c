"""Quota enforcement under load: 1,000 concurrent steps on one tenant's quota for one model.

    .venv/bin/python benchmarks/quota.py
    .venv/bin/python benchmarks/quota.py --steps 1000 --rpm 200 --tpm 100000 --speed 20
    .venv/bin/python benchmarks/quota.py --backend dynamodb    # the AWS store, on moto

Each step is a thread that does what a model step does before its call: `QuotaGuard.admit` (the
runtime's code) takes one request and its worst case in tokens (`--max-tokens`) from the real
quota store, a fresh PostgreSQL database by default; a throttled step waits what the refusal's
`retry_after` says, with jitter, and asks again, as the compiled `Retry` would. An admitted step
"calls the model" (a few ms) and settles its tokens to what it used (a third to all of its
worst case), giving the rest back. One step in ten is `high` priority, the others `normal`.

Minutes are compressed: the stores' clock runs `--speed` times faster than the wall clock (at 20,
a one-minute window lasts 3 s), so several windows pass in one run. The store sees only its clock.

Printed: per window, the requests and tokens admitted (settled) against the quota, and the
largest such count over all windows, which must never exceed the quota (the benchmark exits 1 if
it does); the sliding estimate the store enforces (`current + weighted previous`) at its highest;
the latency of one admission call (p50/p99, admitted and refused apart); and per priority, the
share of each window taken and the time from a step's first try to its admission.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from peers.common import fresh_database, percentile
from psycopg_pool import ConnectionPool

from switchyard.contract.step_errors import ThrottledError
from switchyard.runtime.quotas import ModelQuota, QuotaGuard, share_of
from switchyard.stores.migrate import apply_migrations
from switchyard.stores.quota import (
    WINDOW_SECONDS,
    DynamoDBQuotaStore,
    PostgresQuotaStore,
    QuotaStore,
)

MODEL = "claude-haiku-4-5"
TENANT = "acme"
START = 1_767_225_600.0  # a window's start: the first window is a whole one


class CompressedClock:
    """Seconds since the epoch, running `speed` times faster than the wall clock."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self._zero = time.monotonic()

    def now(self) -> float:
        return START + (time.monotonic() - self._zero) * self.speed

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds / self.speed)


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    tokens: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    by_priority: dict[tuple[int, str], int] = field(default_factory=lambda: defaultdict(int))
    """(window, priority) -> requests admitted."""
    normal_tokens: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    take_admitted_ms: list[float] = field(default_factory=list)
    take_refused_ms: list[float] = field(default_factory=list)
    waited: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    """Simulated seconds from a step's first try to its admission, by priority."""
    highest_estimate: dict[str, int] = field(default_factory=dict)


def step(
    guard: QuotaGuard, clock: CompressedClock, tally: Tally, args: argparse.Namespace, seed: int
) -> None:
    rng = random.Random(seed)
    first_try = clock.now()
    while True:
        began = time.perf_counter()
        try:
            grant = guard.admit(MODEL, args.max_tokens)
        except ThrottledError as refusal:
            with tally.lock:
                tally.take_refused_ms.append((time.perf_counter() - began) * 1000)
            wait = refusal.retry_after if refusal.retry_after is not None else 1.0
            clock.sleep(wait + rng.uniform(0, args.jitter))
            continue
        taken_ms = (time.perf_counter() - began) * 1000
        break
    assert grant is not None
    time.sleep(args.call_ms / 1000)  # the model call
    used = rng.randint(args.max_tokens // 3, args.max_tokens)
    guard.settle(grant, used)
    with tally.lock:
        tally.take_admitted_ms.append(taken_ms)
        tally.requests[grant.window] += 1
        tally.tokens[grant.window] += used
        tally.by_priority[(grant.window, guard.priority)] += 1
        if guard.priority == "normal":
            tally.normal_tokens[grant.window] += used
        tally.waited[guard.priority].append(clock.now() - first_try)


def watch(store: QuotaStore, tally: Tally, stop: threading.Event) -> None:
    """The sliding estimate the store enforces, sampled as the steps run."""
    while not stop.wait(0.02):
        for kind in ("requests", "tokens"):
            usage = store.usage(f"{TENANT}:{MODEL}:{kind}")
            tally.highest_estimate[kind] = max(
                tally.highest_estimate.get(kind, 0), usage.last_minute
            )


@contextmanager
def postgres_store(server: str, clock: Callable[[], float]) -> Iterator[QuotaStore]:
    with fresh_database(server, "bench_quota") as url:
        pool = ConnectionPool(url, min_size=4, max_size=16, open=True, timeout=300)
        with pool.connection() as conn:
            apply_migrations(conn)
        try:
            yield PostgresQuotaStore(pool, clock=clock)
        finally:
            pool.close()


@contextmanager
def dynamodb_store(clock: Callable[[], float]) -> Iterator[QuotaStore]:
    from moto import mock_aws

    from switchyard.stores.budget import create_budget_table
    from tests.unit.stores.backends import serialised_dynamodb_client

    with mock_aws():
        client = serialised_dynamodb_client()  # moto made as atomic per request as DynamoDB
        create_budget_table(client, "budgets")
        yield DynamoDBQuotaStore("budgets", client=client, clock=clock)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("postgres", "dynamodb"), default="postgres")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rpm", type=int, default=200, help="requests per minute")
    parser.add_argument("--tpm", type=int, default=100_000, help="tokens per minute")
    parser.add_argument("--max-tokens", type=int, default=1000, help="a step's worst case")
    parser.add_argument("--high", type=float, default=0.1, help="fraction of high steps")
    parser.add_argument("--speed", type=float, default=20.0, help="simulated s per wall s")
    parser.add_argument("--call-ms", type=float, default=5.0)
    parser.add_argument("--jitter", type=float, default=5.0, help="simulated s added at most")
    return parser.parse_args()


def ms(samples: list[float]) -> str:
    if not samples:
        return "-"
    return f"p50 {statistics.median(samples):.1f} ms, p99 {percentile(samples, 0.99):.1f} ms"


def report(args: argparse.Namespace, tally: Tally, wall: float) -> bool:
    print(
        f"{args.steps} steps at once ({args.high:.0%} high), backend {args.backend}; quota "
        f"{args.rpm} requests and {args.tpm} tokens per minute; a step needs 1 request and up "
        f"to {args.max_tokens} tokens; clock x{args.speed:g}; {wall:.1f} s wall"
    )
    rpm_normal = share_of(args.rpm, "normal")
    tpm_normal = share_of(args.tpm, "normal")
    print(
        f"\n{'window':>6} {'requests':>9} {'/limit':>7} {'normal':>7} {'high':>5} "
        f"{'tokens':>8} {'/limit':>7}"
    )
    first = min(tally.requests)
    for window in sorted(tally.requests):
        print(
            f"{(window - first) // WINDOW_SECONDS:>6} {tally.requests[window]:>9} "
            f"{args.rpm:>7} {tally.by_priority[(window, 'normal')]:>7} "
            f"{tally.by_priority[(window, 'high')]:>5} {tally.tokens[window]:>8} {args.tpm:>7}"
        )
    most_requests = max(tally.requests.values())
    most_tokens = max(tally.tokens.values())
    most_normal = max((n for (_, p), n in tally.by_priority.items() if p == "normal"), default=0)
    normal_tokens = max(tally.normal_tokens.values(), default=0)
    ok = (
        most_requests <= args.rpm
        and most_tokens <= args.tpm
        and most_normal <= rpm_normal
        and normal_tokens <= tpm_normal
    )
    print(
        f"\nmost in one window: {most_requests} requests of {args.rpm}, {most_tokens} tokens of "
        f"{args.tpm}; normal priority at most {most_normal} requests of its {rpm_normal} and "
        f"{normal_tokens} tokens of its {tpm_normal} (80%)"
        f" -> {'never over the limit' if ok else 'OVER THE LIMIT'}"
    )
    print(
        "highest sliding estimate sampled (current + weighted previous): "
        + ", ".join(f"{k} {v}" for k, v in sorted(tally.highest_estimate.items()))
    )
    refused = len(tally.take_refused_ms)
    print(
        f"admission call: admitted {ms(tally.take_admitted_ms)} (n={len(tally.take_admitted_ms)});"
        f" refused {ms(tally.take_refused_ms)} (n={refused})"
    )
    for priority in ("high", "normal"):
        waited = tally.waited[priority]
        if waited:
            print(
                f"{priority:>6}: {len(waited)} steps, first try to admission (simulated s) "
                f"p50 {statistics.median(waited):.0f}, p99 {percentile(waited, 0.99):.0f}, "
                f"max {max(waited):.0f}"
            )
    return ok


def main() -> None:
    args = arguments()
    clock = CompressedClock(args.speed)
    tally = Tally()
    quotas = {MODEL: ModelQuota(tokens_per_minute=args.tpm, requests_per_minute=args.rpm)}
    opened = (
        postgres_store(args.server, clock.now)
        if args.backend == "postgres"
        else dynamodb_store(clock.now)
    )
    with opened as store:
        high = round(args.steps * args.high)
        guards = [
            QuotaGuard(store, quotas, TENANT, "high" if i < high else "normal")
            for i in range(args.steps)
        ]
        random.Random(7).shuffle(guards)
        threads = [
            threading.Thread(target=step, args=(guard, clock, tally, args, i), daemon=True)
            for i, guard in enumerate(guards)
        ]
        stop = threading.Event()
        watcher = threading.Thread(target=watch, args=(store, tally, stop), daemon=True)
        began = time.perf_counter()
        watcher.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        stop.set()
        watcher.join()
    if not report(args, tally, wall):
        sys.exit(1)


if __name__ == "__main__":
    main()
