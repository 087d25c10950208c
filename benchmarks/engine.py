"""Benchmark: switchyard's local engine on PostgreSQL, and the same 3-step workflow on its peers.

    .venv/bin/python benchmarks/engine.py                       # everything (about 5 minutes)
    .venv/bin/python benchmarks/engine.py --only a,b,c --peers none
    .venv/bin/python benchmarks/engine.py --json results.json

(a) step-to-step latency in a 10-step chain of no-op Lambda tasks (durable commits on);
(b) a 3-step chain, start → done; (c) 1,000 3-step runs started at once, until all have ended;
(d) 10,000 runs parked at a human gate (`.waitForTaskToken`): RSS of the engine's process, time
to park them, time to release them (SendTaskSuccess for every token); (e) the 3-step workflow on
DBOS, LangGraph (PostgreSQL checkpointer) and the Temporal dev server in the same run.

PostgreSQL: `--server` (default postgresql://postgres@127.0.0.1:5432); every part gets a fresh
database. The peers run in their own virtualenv (benchmarks/peers/environment.py), never in the
project's. Not a CI test: it prints medians, p99s, ratios and the goals of issue 4.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil
from engine_report import print_report
from engine_workloads import SwitchyardBench
from peers.common import (
    DEFAULT_SERVER,
    durability_settings,
    emit,
    fresh_database,
    parse_result,
    summary,
)
from peers.environment import MODULES, default_venv, ensure_venv

SECTIONS = ("a", "b", "c", "d", "e")


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=DEFAULT_SERVER, help="PostgreSQL server URL")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, e.g. a,b,e")
    parser.add_argument("--peers", default="dbos,langgraph,temporal", help="or none")
    parser.add_argument("--peers-venv", type=Path, default=None, help="default: ~/.cache/...")
    parser.add_argument("--runs", type=int, default=300, help="measured runs for (a) and (b)")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured runs first")
    parser.add_argument("--burst", type=int, default=1000, help="(c): runs started at once")
    parser.add_argument("--parked", type=int, default=10000, help="(d): runs at the gate")
    parser.add_argument("--peer-timeout", type=float, default=900.0, help="seconds per peer")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument(
        "--quiet-load", type=float, default=0.0, help="first wait until the 1-min load is below"
    )
    parser.add_argument("--gate-child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def machine(url: str) -> dict[str, Any]:
    model = "?"
    with open("/proc/cpuinfo") as cpuinfo:  # noqa: PTH123 - Linux-only probe
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
        "postgresql": durability_settings(url),
        "commit_ms": commit_latency(url),
        "engine_source": engine_source(),
    }


def engine_source() -> str:
    """The commit measured, and whether the engine's files differed from it."""
    root = Path(__file__).resolve().parent.parent

    def git(*words: str) -> str:
        done = subprocess.run(["git", *words], cwd=root, capture_output=True, text=True)
        return done.stdout.strip()

    changed = git("status", "--porcelain", "--", "layers/switchyard/engine").splitlines()
    dirty = f", with {len(changed)} engine files changed in the work tree" if changed else ""
    return f"{git('rev-parse', '--short', 'HEAD')}{dirty}"


def wait_for_quiet(limit: float, seconds: float) -> None:
    """Other work on a 2-core machine skews every number: wait (a while) for it to end."""
    deadline = time.monotonic() + seconds
    while os.getloadavg()[0] > limit and time.monotonic() < deadline:
        time.sleep(5)


def commit_latency(url: str, count: int = 300) -> dict[str, float]:
    """One-row INSERT + COMMIT on a logged table: what a durable commit costs on this disk."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE bench_commit_probe (x int)")
        conn.commit()
        samples = []
        for i in range(count):
            begun = time.perf_counter()
            conn.execute("INSERT INTO bench_commit_probe VALUES (%s)", (i,))
            conn.commit()
            samples.append((time.perf_counter() - begun) * 1000)
        conn.execute("DROP TABLE bench_commit_probe")
        conn.commit()
    return summary(samples)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def switchyard_sections(args: argparse.Namespace, sections: set[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with fresh_database(args.server, "bench_switchyard") as url:
        bench = SwitchyardBench(url)
        bench.start()
        try:
            if "a" in sections:
                results["a"] = {"load_before": load()}
                gaps = bench.step_to_step(runs=args.runs, warmup=args.warmup)
                results["a"].update(summary(gaps), runs=args.runs, steps=10)
            if "b" in sections:
                results["b"] = {"load_before": load()}
                samples = bench.end_to_end(runs=args.runs, warmup=args.warmup)
                results["b"].update(summary(samples), runs=args.runs)
            if "c" in sections:
                bench.burst(min(100, args.burst), prefix="cwarm")
                results["c"] = {"load_before": load()}
                burst = bench.burst(args.burst, prefix="c")
                done = burst.pop("done_since_burst_ms")
                results["c"].update(burst, done_since_burst=summary(done))
        finally:
            bench.close()
    return results


def gate_child(args: argparse.Namespace) -> None:
    """(d) in a process of its own, so its RSS is the engine's and nothing else's."""
    me = psutil.Process()
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            peak[0] = max(peak[0], me.memory_info().rss)

    with fresh_database(args.server, "bench_switchyard_gate") as url:
        bench = SwitchyardBench(url)
        bench.start()
        sampler = threading.Thread(target=sample, daemon=True)
        try:
            bench.park_and_release(20, prefix="warmup")  # code paths loaded, connections open
            gc.collect()
            baseline = me.memory_info().rss
            sampler.start()

            def parked_rss() -> dict[str, float]:
                rss = me.memory_info().rss
                gc.collect()
                return {
                    "rss_parked_mb": rss / 2**20,
                    "rss_parked_after_gc_mb": me.memory_info().rss / 2**20,
                }

            result = bench.park_and_release(args.parked, on_parked=parked_rss)
            result["rss_released_mb"] = me.memory_info().rss / 2**20
        finally:
            stop.set()
            bench.close()
    result.update(rss_baseline_mb=baseline / 2**20, rss_peak_mb=max(peak[0], baseline) / 2**20)
    emit(result)


def gate_section(args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--gate-child", "--server", args.server]
    command += ["--parked", str(args.parked)]
    loadavg = load()
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    result = parse_result(done.stdout)
    if done.returncode != 0 or result is None:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"}
    result["load_before"] = loadavg
    return result


def peer_section(name: str, python: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [str(python), str(MODULES[name]), "--server", args.server]
    command += ["--runs", str(args.runs), "--warmup", str(args.warmup)]
    command += ["--concurrent", str(args.burst)]
    loadavg = load()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=args.peer_timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"peer": name, "error": f"no result within {args.peer_timeout:.0f} s"}
    result = parse_result(done.stdout)
    if done.returncode != 0 or result is None:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        return {"peer": name, "error": f"exit {done.returncode}: {tail}"}
    result["load_before"] = loadavg
    return result


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    if args.gate_child:
        gate_child(args)
        return
    sections = set(args.only.split(","))
    if args.quiet_load > 0:
        wait_for_quiet(args.quiet_load, 900)
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
    results["load_before"] = load()
    with fresh_database(args.server, "bench_probe") as url:
        results["machine"] = machine(url)
    results["switchyard"] = switchyard_sections(args, sections)
    if "d" in sections:
        results["switchyard"]["d"] = gate_section(args)
    peers = [p for p in args.peers.split(",") if p and p != "none"] if "e" in sections else []
    if peers:
        python = ensure_venv(args.peers_venv or default_venv())
        results["peers"] = {}
        for name in peers:
            # switchyard again just before each peer, so that each ratio compares two
            # measurements taken under the same load of this shared machine
            adjacent = switchyard_sections(args, {"b", "c"})
            results["peers"][name] = peer_section(name, python, args)
            results["peers"][name]["switchyard_adjacent"] = adjacent
    results["load_after"] = load()
    print_report(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
