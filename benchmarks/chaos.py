"""Chaos benchmark: kill the local engine with SIGKILL hundreds of times while workflows write to
a ledger through sql.query, and count what was lost or done twice (not a CI test).

    .venv/bin/python benchmarks/chaos.py [--runs 450] [--kills 300] [--items 5] [--seed N]
        [--min-delay-ms 3] [--max-delay-ms 350] [--database-url CONNINFO]
    .venv/bin/python benchmarks/chaos.py --database-faults [--runs 1000] [--items 3]
        [--in-flight 40] [--seed N]

With --database-faults the engine is never killed: PostgreSQL is (a server the benchmark starts
itself with pgserver, never the shared one), restarted every 5-20 s, and backends are terminated
at random every 0.5-3 s, while runs with a gate (its timeout approves) and SQL side effects go
through (tests/e2e/db_chaos.py). Prints runs lost, stuck, duplicated SQL effects and the time from
each fault to the engine's next committed progress.

The same harness as tests/e2e/test_crash_safety.py (tests/e2e/engine_chaos.py), at scale: the
engine runs as `python -m switchyard.local.serve` on a fresh database of the test server
(SWITCHYARD_TEST_PG, default 127.0.0.1:5432) unless --database-url names one. Prints runs
completed, lost, duplicated effects, and the time from each restart to the engine owning the
database and to its first progress on runs that were in flight. Exit status 1 when anything was
lost, stuck, wrong or duplicated.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.engine_chaos import ChaosConfig, ChaosReport, run_chaos  # noqa: E402
from tests.pg import fresh_database  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=450)
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--items", type=int, default=5, help="map items per run")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--min-delay-ms", type=float, default=3.0)
    parser.add_argument("--max-delay-ms", type=float, default=350.0)
    parser.add_argument("--finish-timeout", type=float, default=120.0)
    parser.add_argument("--database-url", help="an empty, migrated database (default: a fresh one)")
    parser.add_argument("--database-faults", action="store_true", help="restart PostgreSQL instead")
    parser.add_argument("--in-flight", type=int, default=40, help="with --database-faults")
    args = parser.parse_args()
    if args.database_faults:
        return _database_faults(args)
    config = ChaosConfig(
        runs=args.runs,
        kills=args.kills,
        items=args.items,
        min_delay=args.min_delay_ms / 1000,
        max_delay=args.max_delay_ms / 1000,
        seed=args.seed,
        finish_timeout=args.finish_timeout,
    )
    log_dir = Path(tempfile.mkdtemp(prefix="switchyard-chaos-"))
    print(f"{config.kills} kills, {config.runs} runs of {config.items + 2} ledger writes; "
          f"engine logs in {log_dir}", flush=True)  # fmt: skip
    started = time.monotonic()
    report: ChaosReport
    if args.database_url:
        report = run_chaos(args.database_url, config, log_dir, say=_say(started))
    else:
        with fresh_database() as conninfo:
            report = run_chaos(conninfo, config, log_dir, say=_say(started))
    print(report.summary())
    print("OK: nothing lost, stuck or duplicated" if report.ok else "FAILED")
    return 0 if report.ok else 1


def _database_faults(args: argparse.Namespace) -> int:
    from tests.e2e.db_chaos import FaultConfig, run_database_faults
    from tests.pg_private import private_server

    config = FaultConfig(
        runs=args.runs, items=args.items, in_flight=args.in_flight, seed=args.seed,
        finish_timeout=max(args.finish_timeout, 300.0),
    )  # fmt: skip
    log_dir = Path(tempfile.mkdtemp(prefix="switchyard-dbchaos-"))
    print(f"{config.runs} runs of {config.items + 2} ledger writes and a gate, "
          f"{config.in_flight} in flight; engine logs in {log_dir}", flush=True)  # fmt: skip
    started = time.monotonic()
    with private_server() as server:
        report = run_database_faults(server, config, log_dir, say=_say(started))
    print(report.summary())
    print("OK: nothing lost, stuck or duplicated" if report.ok else "FAILED")
    return 0 if report.ok else 1


def _say(started: float) -> Callable[[str], None]:
    def say(text: str) -> None:
        print(f"  [{time.monotonic() - started:6.0f} s] {text}", flush=True)

    return say


if __name__ == "__main__":
    sys.exit(main())
