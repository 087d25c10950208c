"""Circuit breakers, opening and recovering: a real HTTP downstream that fails, then recovers.

    .venv/bin/python benchmarks/breaker.py
    .venv/bin/python benchmarks/breaker.py --workers 8 --repeats 10 --open-seconds 2

A local HTTP server answers 200 until it is flipped to 503, then 200 again. `--workers` threads,
each a worker of its own (its own `ToolGateway`, as a Lambda function or an engine worker has),
call it in a loop with `http.request` through the gateway: the whole pipeline (the call ledger, the
audit log) and the host's circuit, all on a fresh PostgreSQL database, so the circuit's state is
shared the way it is in production. One repetition, on a fresh circuit (a new server):

1. healthy for `--healthy-seconds`;
2. flipped to failing: the circuit opens once `min_calls` calls have failed in the window;
3. while open, calls are refused without being made (`circuit_open`);
4. the server recovers halfway through the open time; after `open_seconds`, one probe goes
   through, succeeds, and the circuit closes.

Printed, over the repetitions (p50/p99): from the first failed answer to the first refusal (time
to open), and how many calls reached the failing server; the latency of a refused call next to a
healthy one; from opening to the probe reaching the server (time to half-open); from the recovery
to the first successful call (time to close).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from peers.common import fresh_database, percentile
from psycopg_pool import ConnectionPool

from switchyard.contract import RunContext
from switchyard.contract.step_errors import CircuitOpenError, StepError
from switchyard.runtime.tools import (
    CallScope,
    GatewayStores,
    ToolGateway,
    ToolRegistry,
    ToolRequest,
)
from switchyard.stores.audit import PostgresAuditLog
from switchyard.stores.breaker import BreakerPolicy, PostgresBreakerStore
from switchyard.stores.migrate import apply_migrations
from switchyard.stores.tool_calls import PostgresDecisionStore, PostgresToolCallLedger


class Downstream:
    """An HTTP server answering `status`; it notes when each kind of answer first went out."""

    def __init__(self) -> None:
        self.status = 200
        self.lock = threading.Lock()
        self.failed = 0
        self.first_failure: float | None = None
        self.requests_after: list[float] = []
        """When requests arrived once `watch_from` was set (the probe is the first)."""
        self.watch_from: float | None = None
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                now = time.perf_counter()
                with owner.lock:
                    status = owner.status
                    if status >= 500:
                        owner.failed += 1
                        if owner.first_failure is None:
                            owner.first_failure = now
                    if owner.watch_from is not None:
                        owner.requests_after.append(now)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/health"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Observed:
    lock: threading.Lock = field(default_factory=threading.Lock)
    first_refusal: float | None = None
    first_success_after: dict[float, float] = field(default_factory=dict)
    healthy_ms: list[float] = field(default_factory=list)
    refused_ms: list[float] = field(default_factory=list)
    recovered_at: float | None = None
    first_success_after_recovery: float | None = None


def gateway(pool: ConnectionPool, policy: BreakerPolicy) -> ToolGateway:
    stores = GatewayStores(
        PostgresAuditLog(pool),
        PostgresToolCallLedger(pool),
        PostgresDecisionStore(pool),
        breakers=PostgresBreakerStore(pool, policy=policy),
    )
    return ToolGateway(ToolRegistry({}), stores=stores)


def scope() -> CallScope:
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    run = RunContext(id=run_id, workflow="bench", version=1, started_at="2026-01-01T00:00:00Z")
    return CallScope(run=run, step_id="fetch", idempotency_key=f"{run_id}:fetch")


def caller(
    worker: ToolGateway,
    url: str,
    observed: Observed,
    stop: threading.Event,
    pause: float,
    healthy: Callable[[], bool],
) -> None:
    request = ToolRequest("http.request", {"method": "GET", "url": url})
    while not stop.is_set():
        began = time.perf_counter()
        try:
            worker.call(request, scope())
            ok, refused = True, False
        except CircuitOpenError:
            ok, refused = False, True
        except StepError:
            ok, refused = False, False
        ended = time.perf_counter()
        elapsed_ms = (ended - began) * 1000
        with observed.lock:
            if refused:
                observed.refused_ms.append(elapsed_ms)
                if observed.first_refusal is None:
                    observed.first_refusal = ended
            elif ok and healthy():
                observed.healthy_ms.append(elapsed_ms)
            if (
                ok
                and observed.recovered_at is not None
                and observed.first_success_after_recovery is None
            ):
                observed.first_success_after_recovery = ended
        stop.wait(pause)


@dataclass
class Repetition:
    to_open_ms: float
    failed_calls: int
    to_probe_ms: float
    to_close_ms: float
    observed: Observed


def repeat(pool: ConnectionPool, args: argparse.Namespace, policy: BreakerPolicy) -> Repetition:
    server = Downstream()
    observed = Observed()
    stop = threading.Event()
    phase = {"healthy": True}
    workers = [gateway(pool, policy) for _ in range(args.workers)]
    threads = [
        threading.Thread(
            target=caller,
            args=(w, server.url, observed, stop, args.pause_ms / 1000, lambda: phase["healthy"]),
            daemon=True,
        )
        for w in workers
    ]
    try:
        for thread in threads:
            thread.start()
        time.sleep(args.healthy_seconds)
        with server.lock:
            phase["healthy"] = False
            server.status = 503
        deadline = time.perf_counter() + 30
        while observed.first_refusal is None and time.perf_counter() < deadline:
            time.sleep(0.001)
        opened = observed.first_refusal
        if opened is None:
            raise SystemExit("the circuit never opened: is SWITCHYARD_CIRCUIT_BREAKERS off?")
        time.sleep(policy.open_seconds / 2)
        with server.lock:
            failed = server.failed
            server.status = 200
            server.watch_from = time.perf_counter()
        with observed.lock:
            observed.recovered_at = server.watch_from
        deadline = time.perf_counter() + policy.open_seconds + 30
        while observed.first_success_after_recovery is None and time.perf_counter() < deadline:
            time.sleep(0.001)
        closed = observed.first_success_after_recovery
        if closed is None:
            raise SystemExit("the circuit never closed after the downstream recovered")
        time.sleep(0.1)  # a few healthy calls after closing
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        server.close()
    assert server.first_failure is not None and server.watch_from is not None
    probe = server.requests_after[0]
    return Repetition(
        to_open_ms=(opened - server.first_failure) * 1000,
        failed_calls=failed,
        to_probe_ms=(probe - opened) * 1000,
        to_close_ms=(closed - server.watch_from) * 1000,
        observed=observed,
    )


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--pause-ms", type=float, default=10.0, help="between a worker's calls")
    parser.add_argument("--healthy-seconds", type=float, default=0.5)
    parser.add_argument("--open-seconds", type=float, default=2.0)
    parser.add_argument("--min-calls", type=int, default=5)
    parser.add_argument("--failure-rate", type=float, default=0.5)
    parser.add_argument("--window-seconds", type=int, default=60)
    return parser.parse_args()


def line(name: str, samples: list[float], unit: str = "ms") -> str:
    return (
        f"{name:<44} p50 {statistics.median(samples):>8.1f} {unit}   "
        f"p99 {percentile(samples, 0.99):>8.1f} {unit}"
    )


def main() -> None:
    args = arguments()
    logging.getLogger("switchyard.runtime.breakers").setLevel(logging.ERROR)  # opened/closed
    policy = BreakerPolicy(
        window_seconds=args.window_seconds,
        min_calls=args.min_calls,
        failure_rate=args.failure_rate,
        open_seconds=args.open_seconds,
        probe_seconds=args.open_seconds,
    )
    results: list[Repetition] = []
    with (
        fresh_database(args.server, "bench_breaker") as url,
        ConnectionPool(url, min_size=2, max_size=args.workers + 2, open=True) as pool,
    ):
        with pool.connection() as conn:
            apply_migrations(conn)
        for _ in range(args.repeats):
            results.append(repeat(pool, args, policy))
    healthy = [ms for r in results for ms in r.observed.healthy_ms]
    refused = [ms for r in results for ms in r.observed.refused_ms]
    print(
        f"{args.workers} workers calling one host through the tool gateway every "
        f"{args.pause_ms:g} ms each; policy: open after {policy.min_calls} calls with "
        f"{policy.failure_rate:.0%} failed, rest {policy.open_seconds:g} s; the host recovers "
        f"{policy.open_seconds / 2:g} s after opening; {args.repeats} repetitions"
    )
    print(line("first failed answer -> circuit open", [r.to_open_ms for r in results]))
    print(
        line(
            "calls that reached the failing host",
            [float(r.failed_calls) for r in results],
            unit="  ",
        )
    )
    print(line(f"a healthy call (n={len(healthy)})", healthy))
    print(line(f"a refused call, fail fast (n={len(refused)})", refused))
    print(line("open -> probe reaches the host (half-open)", [r.to_probe_ms for r in results]))
    print(line("host recovered -> first success (closed)", [r.to_close_ms for r in results]))


if __name__ == "__main__":
    main()
