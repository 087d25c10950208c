"""What every engine benchmark shares: statistics, fresh databases, the result line.

This module imports nothing from switchyard and nothing that a peer's virtualenv lacks (only
psycopg), so `benchmarks/engine.py` and each peer module, run by the peers' own interpreter, use
the same percentile and the same database set-up.

A peer module prints one line `RESULT {json}` on stdout; `benchmarks/engine.py` reads it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

DEFAULT_SERVER = "postgresql://postgres@127.0.0.1:5432"
RESULT_PREFIX = "RESULT "


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest sample with at least `fraction` of them at or below."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def summary(samples_ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples_ms),
        "p50_ms": statistics.median(samples_ms),
        "p99_ms": percentile(samples_ms, 0.99),
        "mean_ms": statistics.fmean(samples_ms),
        "max_ms": max(samples_ms),
    }


def database_url(server: str, name: str) -> str:
    return f"{server.rstrip('/')}/{name}"


@contextmanager
def fresh_database(server: str, prefix: str) -> Iterator[str]:
    """A new, empty database on `server` for one benchmark; dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin_url = database_url(server, "postgres")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield database_url(server, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def durability_settings(url: str) -> dict[str, str]:
    """The server settings that decide whether a commit is durable, as the benchmark ran."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN"
            " ('synchronous_commit', 'fsync', 'wal_sync_method', 'full_page_writes')"
        ).fetchall()
        version = conn.execute("SHOW server_version").fetchone()
    settings = {str(name): str(setting) for name, setting in rows}
    settings["server_version"] = str(version[0]) if version else "?"
    return settings


def peer_arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--server", default=DEFAULT_SERVER, help="PostgreSQL server URL")
    parser.add_argument("--runs", type=int, default=200, help="measured 3-step workflows")
    parser.add_argument("--warmup", type=int, default=20, help="3-step workflows not measured")
    parser.add_argument("--concurrent", type=int, default=1000, help="workflows started at once")
    return parser.parse_args()


def timed_runs(run: Any, *, runs: int, warmup: int) -> list[float]:
    """Milliseconds of `run(i)` for `runs` calls after `warmup` unmeasured ones."""
    for i in range(warmup):
        run(f"warmup-{i}")
    samples: list[float] = []
    for i in range(runs):
        started = time.perf_counter()
        run(f"run-{i}")
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def emit(result: dict[str, Any]) -> None:
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            parsed: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            return parsed
    return None
