"""Where the engine's time goes in benchmarks (a) to (c): a py-spy profile by thread and category,
and the SQL statements one 3-step run sends.

    .venv/bin/pip install py-spy     # into the project's venv; not a project dependency
    .venv/bin/python benchmarks/engine_profile.py record [--out /tmp/engine-profile.txt]
    .venv/bin/python benchmarks/engine_profile.py summarize /tmp/engine-profile.txt
    .venv/bin/python benchmarks/engine_profile.py statements [--runs 20]
    .venv/bin/python benchmarks/engine_profile.py breakdown [--runs 300]
    .venv/bin/python benchmarks/engine_profile.py waits [--runs 50]
    .venv/bin/python benchmarks/engine_profile.py cpu [--runs 300 --burst 1000]

`record` samples every thread 1,000 times a second, idle or not (`py-spy --idle`), while
`benchmarks/engine.py --only a,b,c --peers none` runs. Each sample goes to the category of its
innermost recognised frame: waiting on PostgreSQL (blocked in psycopg's `Connection.wait`: the
server's work, the WAL fsync, loopback I/O), psycopg's Python side (building and parsing protocol
messages), JSON, the interpreter (ASL evaluation, events), the store (rows from transitions),
thread hand-offs (queues, futures, conditions), and the coordinator's own code. Sampling slows the
engine a little: read shares, not latencies, from it.

`statements` sets `log_statement = all` on a fresh database only, runs 3-step workflows one at a
time, and counts what each connection sent (the server log is read from `--log`).

`breakdown` times the phases of 3-step runs one at a time: the start's commit, each task-to-task
transition, the last transition and `Engine.wait`'s wake-up.

`waits` counts, per 3-step run, the pipeline syncs the coordinator sends and the times it waits for
the server's results (psycopg's pipeline wrapped): each wait is a round trip.

`cpu` reads the CPU time (`/proc/.../schedstat`, ns) of the coordinator thread, of this whole
process and of the coordinator connection's PostgreSQL backend, over 3-step runs one at a time and
over a burst. CPU time moves much less with other work on the machine than latency does.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers.common import DEFAULT_SERVER, fresh_database

HERE = Path(__file__).resolve().parent
IDLE = "idle: waiting for work"
PG_WAIT = "PostgreSQL: waiting for the server (execution, commit fsync, I/O)"
PSYCOPG = "psycopg: building/parsing messages (Python)"
JSON = "JSON encode/decode"
INTERPRETER = "interpreter: ASL evaluation, events"
STORE = "store/records: rows from transitions"
HANDOFF = "thread hand-offs: queues, futures, conditions"
COORDINATOR = "coordinator code (engine.py)"
DISPATCH = "dispatch: Lambda context, handler call"
OTHER = "other"
_RULES: list[tuple[str, str]] = [
    ("psycopg/", PSYCOPG),
    ("json/", JSON),
    ("switchyard/engine/interpreter/", INTERPRETER),
    ("switchyard/engine/asl/", INTERPRETER),
    ("switchyard/engine/store/", STORE),
    ("switchyard/records/", STORE),
    ("switchyard/gates/store.py", STORE),
    ("switchyard/engine/dispatch/", DISPATCH),
    ("queue.py", HANDOFF),
    ("concurrent/futures/", HANDOFF),
    ("threading.py", HANDOFF),
    ("switchyard/engine/engine.py", COORDINATOR),
]
_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^:()]*):\d+\)$")


def thread_group(first: str) -> str:
    name = first.split(": ", 1)[1] if ": " in first else "MainThread"
    if name.startswith("switchyard-task"):
        return "workers (switchyard-task-*)"
    if name == "switchyard-engine":
        return "coordinator (switchyard-engine)"
    if name.startswith("pool-"):
        return "connection pool threads"
    return name


def categorize(frames: list[str]) -> str:
    parsed = [_FRAME.match(frame) for frame in frames]
    names = [m.group("name") if m else frame for m, frame in zip(parsed, frames, strict=True)]
    if any(n in ("Engine._take", "_WorkItem.run") for n in names) and not any(
        "switchyard/engine/" in (m.group("file") if m else "")
        for m in parsed[names.index("Engine._take") + 1 if "Engine._take" in names else 0 :]
    ):
        return IDLE
    if names and names[-1] in ("Connection.wait", "AsyncConnection.wait"):
        return PG_WAIT
    if names and names[-1] in ("_worker", "SimpleQueue.get") and "Engine._loop" not in names:
        return IDLE
    for match in reversed(parsed):
        if match is None:
            continue
        file = match.group("file")
        for needle, category in _RULES:
            if needle in file:
                return category
    return OTHER


def summarize(raw: Path, rate: int) -> None:
    by_thread: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for line in raw.read_text().splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        group = thread_group(frames[0])
        by_thread[group][categorize(frames[1:])] += int(count)
    for group in ("coordinator (switchyard-engine)", "workers (switchyard-task-*)"):
        counter = by_thread.get(group)
        if not counter:
            continue
        total = sum(counter.values())
        busy = total - counter[IDLE]
        print(f"{group}: {total / rate:.1f} s sampled, {busy / rate:.1f} s not idle")
        for category, samples in counter.most_common():
            share = samples / busy * 100 if category != IDLE else samples / total * 100
            base = "of non-idle" if category != IDLE else "of all"
            print(f"  {samples / rate:7.2f} s  {share:5.1f}% {base:11}  {category}")


def record(args: argparse.Namespace) -> None:
    spy = Path(sys.executable).parent / "py-spy"
    command = [
        str(spy), "record", "--idle", "--threads", "--nonblocking", "--format", "raw",
        "-r", str(args.rate), "-o", str(args.out), "--",
        sys.executable, str(HERE / "engine.py"), "--only", "a,b,c", "--peers", "none",
        "--runs", str(args.runs), "--burst", str(args.burst), "--server", args.server,
    ]  # fmt: skip
    subprocess.run(command, check=True)
    warmup = 30
    transitions = (args.runs + warmup) * (11 + 4) + (args.burst + min(100, args.burst)) * 4
    print(f"\n≈ {transitions} transitions in the profiled run")
    summarize(args.out, args.rate)


def statements(args: argparse.Namespace) -> None:
    from engine_workloads import SwitchyardBench
    from psycopg import connect, sql

    log = Path(args.log)
    offset = log.stat().st_size
    with fresh_database(args.server, "bench_statements") as url:
        name = url.rsplit("/", 1)[1]
        with connect(url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} SET log_statement = 'all'").format(sql.Identifier(name))
            )
        bench = SwitchyardBench(url)
        bench.start()
        try:
            bench.end_to_end(runs=5, warmup=0, prefix="warm")
            time.sleep(0.5)
            begin = log.stat().st_size
            bench.end_to_end(runs=args.runs, warmup=0)
            time.sleep(0.5)
            end = log.stat().st_size
        finally:
            bench.close()
    assert begin >= offset
    with log.open("rb") as handle:
        handle.seek(begin)
        text = handle.read(end - begin).decode(errors="replace")
    per_pid: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    marker = re.compile(rf"\[(\d+)\] \S*@{re.escape(name)} LOG:  (?:statement|execute [^:]+): (.*)")
    lines = text.splitlines()
    for number, line in enumerate(lines):
        found = marker.search(line)
        if found:
            # a statement written over several lines (the store's SQL) starts on the next one
            statement = found.group(2).strip() or " ".join(lines[number + 1 : number + 4])
            words = statement.split()
            kind = " ".join(words[:3]) if words[0].upper() in ("INSERT", "DELETE") else words[0]
            if words[0].upper() in ("UPDATE", "SELECT", "WITH"):
                kind = f"{words[0]} … {_table(statement)}"
            per_pid[found.group(1)][kind] += 1
    for pid, counter in sorted(per_pid.items(), key=lambda item: -sum(item[1].values())):
        total = sum(counter.values())
        print(f"connection {pid}: {total} statements = {total / args.runs:.1f} per 3-step run")
        for kind, count in counter.most_common():
            print(f"  {count / args.runs:5.1f}  {kind}")


def breakdown(args: argparse.Namespace) -> None:
    """Where a 3-step run's wall time goes, phase by phase, one run at a time."""
    from engine_workloads import SwitchyardBench
    from peers.common import summary
    from psycopg import connect, sql

    from switchyard.engine.commands import StartExecution

    phases: dict[str, list[float]] = collections.defaultdict(list)
    with fresh_database(args.server, "bench_breakdown") as url:
        if args.no_fsync_wait:  # for analysis only: what the WAL flush costs per transition
            with connect(url, autocommit=True) as conn:
                name = sql.Identifier(url.rsplit("/", 1)[1])
                conn.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(name))
        bench = SwitchyardBench(url)
        bench.start()
        try:
            for i in range(args.warmup + args.runs):
                name = f"p-{i}"
                begun = time.perf_counter()
                command = StartExecution(bench.machine_arns["chain3"], name, {})
                arn = bench.engine.submit(command)["executionArn"]
                accepted = time.perf_counter()
                bench.engine.wait(arn, timeout=60)
                ended = time.perf_counter()
                marks = sorted(bench.steps.marks[name])
                if i < args.warmup:
                    continue
                phases["start: submit → first task called"].append(marks[0][1] - begun)
                phases["start: submit → reply"].append(accepted - begun)
                for gap, (cur, nxt) in enumerate(itertools.pairwise(marks), 1):
                    phases[f"task {gap} returned → task {gap + 1} called"].append(nxt[1] - cur[2])
                phases["task 3 returned → wait() returns"].append(ended - marks[-1][2])
                phases["total"].append(ended - begun)
        finally:
            bench.close()
    for phase, seconds in phases.items():
        stats = summary([x * 1000 for x in seconds])
        print(f"  {phase:38} p50 {stats['p50_ms']:6.2f} ms  p99 {stats['p99_ms']:6.2f} ms")


def waits(args: argparse.Namespace) -> None:
    from engine_workloads import SwitchyardBench
    from psycopg import _pipeline_base

    counts: collections.Counter[str] = collections.Counter()
    pipeline = _pipeline_base.BasePipeline
    enqueue_sync, fetch_gen = pipeline._enqueue_sync, pipeline._fetch_gen

    def coordinator() -> bool:
        return threading.current_thread().name == "switchyard-engine"

    def counted_sync(self: Any) -> None:
        counts["syncs"] += coordinator()
        enqueue_sync(self)

    def counted_fetch(self: Any, *, flush: bool) -> Any:
        counts["waits for results"] += coordinator() and flush and bool(self.result_queue)
        return (yield from fetch_gen(self, flush=flush))

    pipeline._enqueue_sync, pipeline._fetch_gen = counted_sync, counted_fetch  # type: ignore[method-assign]
    with fresh_database(args.server, "bench_waits") as url:
        bench = SwitchyardBench(url)
        bench.start()
        try:
            bench.end_to_end(runs=5, warmup=0, prefix="warm")
            counts.clear()
            bench.end_to_end(runs=args.runs, warmup=0)
        finally:
            bench.close()
    for what, count in counts.items():
        print(f"  {count / args.runs:5.1f} {what} per 3-step run")


def _cpu_ns(path: str) -> int:
    try:
        return int(Path(path).read_text().split()[0])
    except OSError:  # a thread that ended
        return 0


def cpu(args: argparse.Namespace) -> None:
    from engine_workloads import SwitchyardBench

    def snapshot(bench: SwitchyardBench) -> tuple[int, int, int]:
        assert bench.engine._thread is not None and bench.engine._conn is not None
        coordinator = bench.engine._thread.native_id
        backend = bench.engine._conn.info.backend_pid
        threads = Path("/proc/self/task").glob("*/schedstat")
        return (
            _cpu_ns(f"/proc/self/task/{coordinator}/schedstat"),
            sum(_cpu_ns(str(path)) for path in threads),
            _cpu_ns(f"/proc/{backend}/schedstat"),
        )

    with fresh_database(args.server, "bench_cpu") as url:
        bench = SwitchyardBench(url)
        bench.start()
        try:
            bench.end_to_end(runs=30, warmup=0, prefix="warm")
            before = snapshot(bench)
            bench.end_to_end(runs=args.runs, warmup=0)
            one_by_one = (before, snapshot(bench))
            bench.burst(min(100, args.burst), prefix="cwarm")
            before = snapshot(bench)
            burst = bench.burst(args.burst, prefix="c")
            at_once = (before, snapshot(bench))
        finally:
            bench.close()
    print(f"load average {os.getloadavg()[0]:.2f}; µs of CPU per 3-step run:")
    print("                    coordinator  process  PostgreSQL backend")
    for label, (start, end), runs in (
        ("one at a time", one_by_one, args.runs),
        (f"{args.burst} at once", at_once, args.burst),
    ):
        used = [(b - a) / runs / 1000 for a, b in zip(start, end, strict=True)]
        print(f"  {label:16} {used[0]:11.0f} {used[1]:8.0f} {used[2]:19.0f}")
    print(f"  (the burst: {burst['per_second']:.0f} workflows/s)")


def _table(statement: str) -> str:
    found = re.search(r"(?:FROM|UPDATE)\s+(\w+)", statement, re.IGNORECASE)
    return found.group(1) if found else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=DEFAULT_SERVER)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--out", type=Path, default=Path("/tmp/engine-profile.txt"))
    rec.add_argument("--rate", type=int, default=1000)
    rec.add_argument("--runs", type=int, default=200)
    rec.add_argument("--burst", type=int, default=1000)
    summ = sub.add_parser("summarize")
    summ.add_argument("raw", type=Path)
    summ.add_argument("--rate", type=int, default=1000)
    stat = sub.add_parser("statements")
    stat.add_argument("--runs", type=int, default=20)
    stat.add_argument("--log", default="/var/log/postgresql/postgresql-15-main.log")
    brk = sub.add_parser("breakdown")
    brk.add_argument("--runs", type=int, default=300)
    brk.add_argument("--warmup", type=int, default=30)
    brk.add_argument(
        "--no-fsync-wait",
        action="store_true",
        help="synchronous_commit=off on this database (not durable; to see the flush's share)",
    )
    wts = sub.add_parser("waits")
    wts.add_argument("--runs", type=int, default=50)
    cpus = sub.add_parser("cpu")
    cpus.add_argument("--runs", type=int, default=300)
    cpus.add_argument("--burst", type=int, default=1000)
    args = parser.parse_args()
    if args.command == "waits":
        waits(args)
    elif args.command == "cpu":
        cpu(args)
    elif args.command == "record":
        record(args)
    elif args.command == "summarize":
        summarize(args.raw, args.rate)
    elif args.command == "breakdown":
        breakdown(args)
    else:
        statements(args)


if __name__ == "__main__":
    main()
