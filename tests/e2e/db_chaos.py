"""Database faults under load: PostgreSQL restarted every few seconds and backends terminated at
random, while runs with a gate and SQL side effects go through one engine that is never killed
(benchmarks/chaos.py --database-faults). Counts runs lost, stuck and failed, duplicated and
missing SQL effects, and the time from each fault to the engine's next committed progress.

The server is one the harness starts itself (tests/pg_private.py), never the shared one.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from tests.e2e.engine_chaos import ChaosReport, EngineUnderTest, _check, _start, prepare
from tests.pg_private import PrivateServer

WORKFLOW = Path(__file__).resolve().parent / "workflows" / "db-chaos.yaml"


@dataclass(frozen=True)
class FaultConfig:
    runs: int = 100
    items: int = 3
    in_flight: int = 40
    """Runs kept started and unfinished at a time."""
    restart_every: tuple[float, float] = (5.0, 20.0)
    terminate_every: tuple[float, float] = (0.5, 3.0)
    seed: int | None = None
    finish_timeout: float = 300.0


@dataclass
class Fault:
    kind: str  # "restart" or "terminate"
    at: float
    recovered_after: float | None = None
    """Seconds from the fault to the first history event committed after it."""


@dataclass
class FaultReport:
    chaos: ChaosReport
    faults: list[Fault] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    log_lines: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        chaos = self.chaos
        return (
            chaos.succeeded == chaos.runs
            and not chaos.lost
            and not self.stuck
            and not chaos.duplicated
            and not chaos.missing_effects
            and not chaos.wrong_outputs
            and not chaos.leftovers
        )

    def summary(self) -> str:
        chaos = self.chaos
        lines = [
            f"seed {chaos.seed}: {chaos.runs} runs, {chaos.duration:.1f} s",
            f"runs completed (SUCCEEDED): {chaos.succeeded}/{chaos.runs}; lost: "
            f"{len(chaos.lost)}; stuck: {len(self.stuck)}; other end: "
            f"{len(chaos.not_succeeded) - len(self.stuck)}",
            f"duplicated SQL effects: {sum(n - 1 for n in chaos.duplicated.values())}; missing "
            f"effects: {len(chaos.missing_effects)}; wrong outputs: {len(chaos.wrong_outputs)}; "
            f"leftovers: {chaos.leftovers or 'none'}",
        ]
        for kind in ("restart", "terminate"):
            faults = [f for f in self.faults if f.kind == kind]
            times = [f.recovered_after for f in faults if f.recovered_after is not None]
            lines.append(f"{kind}s: {len(faults)}; fault -> next progress: {_stats(times)}")
        lines.append(
            "engine log: " + ", ".join(f"{what}: {count}" for what, count in self.log_lines.items())
        )
        for name, status in sorted(chaos.not_succeeded.items())[:3]:
            lines.append(f"--- {name}: {status}\n{chaos.diagnoses.get(name, '')}")
        return "\n".join(lines)


def _stats(values: list[float]) -> str:
    if not values:
        return "none measured"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"median {statistics.median(ordered):.2f} s, p95 {p95:.2f} s, max {ordered[-1]:.2f} s "
        f"({len(ordered)} measured)"
    )


def _patiently(action: Callable[[], Any], stop: threading.Event | None = None) -> Any:
    """What a client does while the database restarts: try again shortly."""
    while True:
        try:
            return action()
        except (psycopg.OperationalError, psycopg.InterfaceError, TimeoutError):
            if stop is not None and stop.is_set():
                raise
            time.sleep(0.2)


def _history_count(conninfo: str) -> int:
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=2) as conn:
        row = conn.execute("SELECT count(*) FROM sfn_history").fetchone()
    return int(row[0]) if row else 0


def _unfinished(conninfo: str, names: list[str]) -> int:
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=2) as conn:
        row = conn.execute(
            "SELECT count(*) FROM sfn_executions WHERE name = ANY(%s) AND status = 'RUNNING'",
            (names,),
        ).fetchone()
    return int(row[0]) if row else 0


class Faults:
    """A thread that restarts the server and terminates backends, and a watcher that times the
    engine's recovery from each fault (the first history event committed after it)."""

    def __init__(self, server: PrivateServer, config: FaultConfig, rng: random.Random) -> None:
        self._server = server
        self._config = config
        self._rng = rng
        self.faults: list[Fault] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)
        self._began = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def _run(self) -> None:
        next_restart = time.monotonic() + self._rng.uniform(*self._config.restart_every)
        while not self._stop.is_set():
            pause = self._rng.uniform(*self._config.terminate_every)
            if self._stop.wait(min(pause, max(0.0, next_restart - time.monotonic()))):
                return
            if time.monotonic() >= next_restart:
                self._fault("restart", self._server.restart)
                next_restart = time.monotonic() + self._rng.uniform(*self._config.restart_every)
            else:
                self._fault("terminate", self._terminate_some)

    def _terminate_some(self) -> None:
        with psycopg.connect(self._server.conninfo, autocommit=True, connect_timeout=5) as conn:
            pids = [
                int(row[0])
                for row in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
                    " AND pid <> pg_backend_pid()"
                )
            ]
            chosen = self._rng.sample(pids, k=max(1, len(pids) // 2)) if pids else []
            for pid in chosen:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))

    def _fault(self, kind: str, act: Callable[[], None]) -> None:
        before = _patiently(lambda: _history_count(self._server.conninfo), self._stop)
        fault = Fault(kind, time.monotonic() - self._began)
        started = time.monotonic()
        try:
            act()
        except (psycopg.Error, OSError) as exc:
            print(f"fault {kind} could not be done: {exc}", flush=True)
            return
        self.faults.append(fault)
        deadline = started + 60
        while time.monotonic() < deadline and not self._stop.is_set():
            try:
                if _history_count(self._server.conninfo) > before:
                    fault.recovered_after = time.monotonic() - started
                    return
            except psycopg.OperationalError:
                pass
            time.sleep(0.05)


def run_database_faults(
    server: PrivateServer,
    config: FaultConfig,
    log_dir: Path,
    *,
    say: Callable[[str], None] = lambda _: None,
) -> FaultReport:
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    conninfo = server.conninfo
    version_arn = prepare(conninfo, WORKFLOW)
    names = [f"dbchaos-{i:05d}" for i in range(config.runs)]
    engine = EngineUnderTest(conninfo, log_dir)
    report = FaultReport(ChaosReport(seed, config.runs, 0, 0.0, log_dir=log_dir))
    began = time.monotonic()
    engine.spawn()
    faults = Faults(server, config, rng)
    try:
        _patiently(lambda: _wait_owned(conninfo))
        faults.start()
        started = 0
        while started < len(names):
            begun = names[:started]
            unfinished = _patiently(partial(_unfinished, conninfo, begun))
            for name in names[started : started + max(0, config.in_flight - unfinished)]:
                _patiently(partial(_start, conninfo, version_arn, name, config.items))
                started += 1
            if started and started % 100 < config.in_flight and unfinished:
                say(f"{started} runs started, {unfinished} unfinished, {len(faults.faults)} faults")
            time.sleep(0.2)
        deadline = time.monotonic() + config.finish_timeout
        while time.monotonic() < deadline:
            if _patiently(lambda: _unfinished(conninfo, names)) == 0:
                break
            time.sleep(0.5)
    finally:
        faults.stop()
        engine.stop()
    report.faults = faults.faults
    report.chaos.duration = time.monotonic() - began
    _patiently(lambda: _check(conninfo, names, config.items, report.chaos))
    report.stuck = [n for n, s in report.chaos.statuses.items() if s == "RUNNING"]
    text = "\n".join(p.read_text(errors="replace") for p in sorted(log_dir.glob("engine-*.log")))
    report.log_lines = {
        "outages logged": text.count("lost the database"),
        "recoveries logged": text.count("has the database back"),
        "tracebacks": text.count("Traceback"),
        "lines": text.count("\n"),
    }
    return report


def _wait_owned(conninfo: str) -> None:
    from tests.e2e.engine_chaos import _owner

    with psycopg.connect(conninfo, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while _owner(conn) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the engine did not take the database")
            time.sleep(0.05)
