"""Kill the local engine with SIGKILL while workflows write to a ledger, restart it, and check that
nothing was lost, stuck or done twice. Used by `test_crash_safety.py` (CI, ~20 kills) and
`benchmarks/chaos.py` (hundreds).

The engine runs as a real process, `python -m switchyard.local.serve`, on a real PostgreSQL
database. Runs of `workflows/crash-ledger.yaml` are started in waves through the database's
command queue while the engine is up (never with a command in flight when it is killed), so
kills find runs in flight. Each kill comes a random few to few hundred milliseconds after a
moment of the engine's life: just after it took the database (often mid-recovery), just after it
made progress on runs that existed before it started, or just after it accepted new runs.

Every run writes ledger rows keyed by its logical step (`<run>:open`, `<run>:fan:<i>`,
`<run>:close`) through `sql.query` with side effect `idempotent`; a key with two rows is a
duplicated effect, and a run output whose ledger ids differ from the table's is a wrong replay.
"""

from __future__ import annotations

import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from switchyard.engine import remote
from switchyard.engine.arns import Arns
from switchyard.engine.ownership import ENGINE_LOCK
from switchyard.engine.store import EngineStore
from switchyard.local.workflows import install
from switchyard.runtime.breakers import BREAKERS_ENV

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = Path(__file__).resolve().parent / "workflows" / "crash-ledger.yaml"
LEDGER_ENV = "SWITCHYARD_SQL_LEDGER"
POLL = 0.01

SCHEMA = """
CREATE TABLE IF NOT EXISTS crash_ledger (
    id      bigserial PRIMARY KEY,
    key     text NOT NULL,          -- no unique constraint: a duplicate effect must show
    run_id  text NOT NULL,
    step    text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS crash_flaky (run_id text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS crash_started (key text NOT NULL);
"""


@dataclass(frozen=True)
class ChaosConfig:
    runs: int = 48
    kills: int = 22
    items: int = 5
    """Map items per run: one ledger row each, besides `open` and `close`."""
    min_delay: float = 0.003
    max_delay: float = 0.35
    seed: int | None = None
    finish_timeout: float = 60.0
    """Seconds the last engine has to finish every run."""
    progress_timeout: float = 10.0
    """Seconds a restarted engine may take to make progress before the next kill anyway."""


@dataclass
class Cycle:
    """One life of the engine, from spawn to SIGKILL."""

    anchor: str
    delay: float
    owned_after: float | None = None
    progress_after: float | None = None
    started_runs: int = 0
    stalled: bool = False
    """Runs were in flight and the engine made no progress on them within `progress_timeout`."""


@dataclass
class ChaosReport:
    seed: int
    runs: int
    kills: int
    duration: float
    statuses: dict[str, str] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    duplicated: dict[str, int] = field(default_factory=dict)
    """Ledger key -> rows, for keys written more than once."""
    missing_effects: list[str] = field(default_factory=list)
    wrong_outputs: list[str] = field(default_factory=list)
    leftovers: dict[str, int] = field(default_factory=dict)
    """Pending tasks and timers left behind by finished runs."""
    cycles: list[Cycle] = field(default_factory=list)
    diagnoses: dict[str, str] = field(default_factory=dict)
    """Execution name -> history, frames, tasks and timers, for runs that did not succeed."""
    log_dir: Path | None = None

    @property
    def succeeded(self) -> int:
        return sum(1 for s in self.statuses.values() if s == "SUCCEEDED")

    @property
    def not_succeeded(self) -> dict[str, str]:
        return {n: s for n, s in self.statuses.items() if s != "SUCCEEDED"}

    @property
    def ok(self) -> bool:
        return (
            self.succeeded == self.runs
            and not self.lost
            and not self.duplicated
            and not self.missing_effects
            and not self.wrong_outputs
            and not self.leftovers
            and not self.stalls
        )

    @property
    def stalls(self) -> int:
        return sum(1 for c in self.cycles if c.stalled)

    def summary(self) -> str:
        own = [c.owned_after for c in self.cycles if c.owned_after is not None]
        progress = [c.progress_after for c in self.cycles if c.progress_after is not None]
        lines = [
            f"seed {self.seed}: {self.kills} kills, {self.runs} runs, {self.duration:.1f} s",
            f"runs completed (SUCCEEDED): {self.succeeded}/{self.runs}; "
            f"not succeeded: {len(self.not_succeeded)}; lost: {len(self.lost)}",
            f"duplicated effects: {sum(n - 1 for n in self.duplicated.values())} "
            f"(keys {len(self.duplicated)}); missing effects: {len(self.missing_effects)}; "
            f"wrong outputs: {len(self.wrong_outputs)}; leftovers: {self.leftovers or 'none'}; "
            f"lives without progress on runs in flight: {self.stalls}",
            "restart -> owns the database: " + _stats(own),
            f"restart -> progress on runs in flight ({len(progress)} of {len(self.cycles)} lives "
            "got that far): " + _stats(progress),
        ]
        anchors = {a: sum(1 for c in self.cycles if c.anchor == a) for a in _ANCHORS}
        delays = [c.delay * 1000 for c in self.cycles] or [0.0]
        lines.append(
            "kill moments: "
            + ", ".join(f"{n} after {a}" for a, n in anchors.items())
            + f"; delays {min(delays):.0f}-{max(delays):.0f} ms after them"
        )
        for name, status in sorted(self.not_succeeded.items())[:5]:
            lines.append(f"--- {name}: {status}\n{self.diagnoses.get(name, '')}")
        if self.log_dir is not None:
            lines.append(f"engine logs: {self.log_dir}")
        return "\n".join(lines)


_ANCHORS = ("ownership", "progress", "new runs")


def _stats(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]  # nearest rank
    return (
        f"median {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
        f"max {ordered[-1] * 1000:.0f} ms (n={len(ordered)})"
    )


def prepare(conninfo: str, workflow: Path = WORKFLOW) -> str:
    """Ledger tables and the installed workflow; the version ARN to start runs on."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(SCHEMA)
        return install(EngineStore(conn), Arns(), workflow).version_arn


class EngineUnderTest:
    """`python -m switchyard.local.serve` as a child process, one log file per life."""

    def __init__(self, conninfo: str, log_dir: Path) -> None:
        self.conninfo = conninfo
        self.log_dir = log_dir
        self.lives = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.env = dict(os.environ)
        self.env[LEDGER_ENV] = conninfo
        # The flaky step fails the first call of every run on purpose, which a circuit breaker
        # rightly reads as a failing downstream; what is measured here is crash safety.
        self.env[BREAKERS_ENV] = "off"
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO), self.env.get("PYTHONPATH", "")) if p
        )

    def spawn(self) -> None:
        self.lives += 1
        log = (self.log_dir / f"engine-{self.lives:04d}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "switchyard.local.serve", "--database-url", self.conninfo],
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def _owner(conn: psycopg.Connection[Any]) -> int | None:
    """The backend holding this database's engine lock (other databases' engines on the same
    server hold the same lock number)."""
    row = conn.execute(
        "SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = %s"
        " AND d.datname = current_database()",
        (ENGINE_LOCK & 0xFFFFFFFF,),
    ).fetchone()
    return int(row[0]) if row else None


def _events_of(conn: psycopg.Connection[Any], executions: list[int]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM sfn_history WHERE execution_id = ANY(%s)", (executions,)
    ).fetchone()
    return int(row[0]) if row else 0


def _running(conn: psycopg.Connection[Any]) -> list[int]:
    rows = conn.execute("SELECT id FROM sfn_executions WHERE status = 'RUNNING'").fetchall()
    return [int(row[0]) for row in rows]


def start(conninfo: str, version_arn: str, name: str, data: Any) -> None:
    """Start a run through the command queue of the engine that owns the database."""
    payload = {"machine_arn": version_arn, "name": name, "input": data}
    remote.send(conninfo, "start", payload, timeout=60)


def _start(conninfo: str, version_arn: str, name: str, items: int) -> None:
    start(conninfo, version_arn, name, {"items": [f"{name}-item-{i}" for i in range(items)]})


def wait_for_owner(conninfo: str, engine: EngineUnderTest, timeout: float = 30.0) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        deadline = time.monotonic() + timeout
        while _owner(conn) is None:
            if not engine.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the engine did not take the database; see {engine.log_dir}")
            time.sleep(POLL)


def run_chaos(
    conninfo: str,
    config: ChaosConfig,
    log_dir: Path,
    *,
    say: Callable[[str], None] = lambda _: None,
) -> ChaosReport:
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    version_arn = prepare(conninfo)
    names = [f"chaos-{i:05d}" for i in range(config.runs)]
    engine = EngineUnderTest(conninfo, log_dir)
    report = ChaosReport(seed, config.runs, config.kills, 0.0, log_dir=log_dir)
    began = time.monotonic()
    waiting = list(names)
    with psycopg.connect(conninfo, autocommit=True) as watch:
        try:
            for life in range(config.kills):
                in_flight = bool(_running(watch))
                anchor = _anchor(rng, in_flight=in_flight, runs_left=bool(waiting))
                wave: list[str] = []
                if anchor == "new runs":
                    # About 40% of the remaining lives start runs: spread them evenly.
                    size = math.ceil(len(waiting) / max(1.0, (config.kills - life) * 0.4))
                    wave, waiting = waiting[:size], waiting[size:]
                report.cycles.append(
                    _one_life(conninfo, watch, engine, rng, config, version_arn, anchor, wave)
                )
                if (life + 1) % 25 == 0:
                    say(f"{life + 1} kills, {config.runs - len(waiting)} runs started")
            engine.spawn()
            for name in waiting:  # what the lives left over starts on the last engine
                _start(conninfo, version_arn, name, config.items)
            wait_until_finished(watch, names, config.finish_timeout)
        finally:
            engine.stop()
    report.duration = time.monotonic() - began
    _check(conninfo, names, config.items, report)
    return report


def _anchor(rng: random.Random, *, in_flight: bool, runs_left: bool) -> str:
    """What the kill's delay counts from: progress only where runs are in flight to progress."""
    if in_flight:
        choices = [("ownership", 0.2), ("progress", 0.4), ("new runs", 0.4 if runs_left else 0)]
        return rng.choices([c for c, _ in choices], [w for _, w in choices])[0]
    return "new runs" if runs_left else "ownership"


def _one_life(
    conninfo: str,
    watch: psycopg.Connection[Any],
    engine: EngineUnderTest,
    rng: random.Random,
    config: ChaosConfig,
    version_arn: str,
    anchor: str,
    wave: list[str],
) -> Cycle:
    previous_owner = _owner(watch)
    in_flight = _running(watch)
    events_before = _events_of(watch, in_flight)
    cycle = Cycle(anchor, rng.uniform(config.min_delay, config.max_delay))
    spawned = time.monotonic()
    engine.spawn()

    def observe() -> None:
        now = time.monotonic() - spawned
        if cycle.owned_after is None:
            owner = _owner(watch)
            if owner is not None and owner != previous_owner:
                cycle.owned_after = now
        if (
            cycle.owned_after is not None
            and cycle.progress_after is None
            and _events_of(watch, in_flight) > events_before
        ):
            cycle.progress_after = now

    def until(condition: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            if not engine.alive():
                raise RuntimeError(f"the engine exited by itself; see {engine.log_dir}")
            observe()
            time.sleep(POLL)
        observe()

    until(lambda: cycle.owned_after is not None, 30.0)
    if cycle.owned_after is None:
        raise RuntimeError(f"a restarted engine did not take the database; see {engine.log_dir}")
    if wave:
        for name in wave:
            _start(conninfo, version_arn, name, config.items)
        cycle.started_runs = len(wave)
    elif anchor == "progress":
        until(lambda: cycle.progress_after is not None, config.progress_timeout)
        if cycle.progress_after is None:
            cycle.stalled = True
    kill_at = time.monotonic() + cycle.delay
    until(lambda: time.monotonic() >= kill_at, cycle.delay + 1.0)
    engine.kill()
    return cycle


def wait_until_finished(watch: psycopg.Connection[Any], names: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = watch.execute(
            "SELECT count(*) FROM sfn_executions WHERE name = ANY(%s) AND status <> 'RUNNING'",
            (names,),
        ).fetchone()
        if row is not None and row[0] == len(names):
            return
        time.sleep(0.1)


def _check(conninfo: str, names: list[str], items: int, report: ChaosReport) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id, name, status, output FROM sfn_executions WHERE name = ANY(%s)", (names,)
        ).fetchall()
        report.statuses = {str(name): str(status) for _, name, status, _ in rows}
        report.lost = [n for n in names if n not in report.statuses]
        ledger: dict[str, list[int]] = {}
        for key, entry in conn.execute("SELECT key, id FROM crash_ledger ORDER BY id"):
            ledger.setdefault(str(key), []).append(int(entry))
        report.duplicated = {k: len(v) for k, v in ledger.items() if len(v) > 1}
        for execution_id, name, status, output in rows:
            expected = [f"{name}:open", *(f"{name}:fan:{i}" for i in range(items)), f"{name}:close"]
            report.missing_effects += [k for k in expected if k not in ledger]
            if status == "SUCCEEDED" and not _output_matches(name, output, ledger, items):
                report.wrong_outputs.append(name)
            if status != "SUCCEEDED":
                report.diagnoses[name] = diagnose(conn, int(execution_id))
        for table in ("sfn_tasks", "sfn_timers"):
            row = conn.execute(
                f"SELECT count(*) FROM {table} t JOIN sfn_executions e ON e.id = t.execution_id"
                " WHERE e.status <> 'RUNNING'"
            ).fetchone()
            if row is not None and row[0]:
                report.leftovers[table] = int(row[0])


def _output_matches(name: str, output: Any, ledger: dict[str, list[int]], items: int) -> bool:
    """The ids the run saw are the ids in the ledger: a replayed result is the first one's."""
    try:
        fan = [entry["rows"][0]["id"] for entry in output["fan"]]
        return bool(
            [output["open"]] == ledger[f"{name}:open"][:1]
            and [output["close"]] == ledger[f"{name}:close"][:1]
            and fan == [ledger[f"{name}:fan:{i}"][0] for i in range(items)]
        )
    except (KeyError, IndexError, TypeError):
        return False


def diagnose(conn: psycopg.Connection[Any], execution_id: int) -> str:
    """What an engine developer needs about one execution: its last history events, its frames,
    its pending tasks and timers."""
    lines = []
    execution = conn.execute(
        "SELECT arn, status, error, cause FROM sfn_executions WHERE id = %s", (execution_id,)
    ).fetchone()
    lines.append(f"execution {execution_id}: {execution}")
    history = conn.execute(
        "SELECT event_id, previous_event_id, type, at, details FROM sfn_history"
        " WHERE execution_id = %s ORDER BY event_id DESC LIMIT 25",
        (execution_id,),
    ).fetchall()
    lines.append("last history events (newest first):")
    lines += [f"  {e} <-{p} {t} {at:%H:%M:%S.%f} {str(d)[:300]}" for e, p, t, at, d in history]
    lines.append("frames:")
    for frame_id, status, data in conn.execute(
        "SELECT frame_id, status, data FROM sfn_frames WHERE execution_id = %s ORDER BY frame_id",
        (execution_id,),
    ):
        lines.append(f"  {frame_id} {status} {str(data)[:400]}")
    for table in ("sfn_tasks", "sfn_timers"):
        found = conn.execute(
            f"SELECT * FROM {table} WHERE execution_id = %s", (execution_id,)
        ).fetchall()
        lines.append(f"{table}: {found}")
    return "\n".join(lines)
