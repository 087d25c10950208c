"""Fairness on the local engine: a small run's latency next to 50-branch fan-outs.

    .venv/bin/python benchmarks/fairness.py
    .venv/bin/python benchmarks/fairness.py --workers 8 --task-ms 50 --fan-outs 1,4 --repeats 5

A fan-out run maps 50 items onto a Task each; a small run is a chain of 3 Tasks. Every Task calls
a registered function that sleeps `--task-ms` (a model or HTTP call's wait), on an engine with
`--workers` workers, so the fan-outs' tasks queue for workers. With the fan-outs' tasks queued,
the small run starts; its latency (start to SUCCEEDED, as a client of the engine sees it) and the
fan-outs' makespan are measured, in three orders of dispatch:

- arrival: one line in the order tasks became ready (the engine before priorities);
- turns: round-robin across runs, every run `normal`;
- priority: the same, the small run `high`.

Tasks carry their run's priority where the compiled machines put it (`context.run.priority`).
Each figure is the median of `--repeats` repetitions on a fresh database, durable commits on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from peers.common import fresh_database

from switchyard.engine import machines
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch.registry import FunctionRegistry
from switchyard.local.stack import local_engine

LAMBDA = "arn:aws:states:::lambda:invoke"
BRANCHES = 50
CHAIN = 3
MODES = ("arrival", "turns", "priority")
RUN = {"id.$": "$$.Execution.Name", "priority.$": "$$.Execution.Input.priority"}
"""`context.run` as the compiled machines pass it: where the engine reads a task's priority."""


def task(end: bool, following: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": LAMBDA,
        "Parameters": {
            "FunctionName": "work",
            "Payload": {"context": {"run": RUN}},
        },
        "ResultPath": None,
    }
    if end:
        state["End"] = True
    else:
        state["Next"] = following
    return state


def fan_out_definition() -> str:
    processor = {"StartAt": "Work", "States": {"Work": task(True)}}
    return json.dumps(
        {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "MaxConcurrency": 0,
                    "ItemProcessor": processor,
                    "ResultPath": None,
                    "End": True,
                }
            },
        }
    )


def chain_definition() -> str:
    states = {f"Step{i}": task(i == CHAIN - 1, f"Step{i + 1}") for i in range(CHAIN)}
    return json.dumps({"StartAt": "Step0", "States": states})


class Bench:
    def __init__(self, conninfo: str, *, workers: int, task_ms: float) -> None:
        self.task_seconds = task_ms / 1000
        self.started = 0
        self._lock = threading.Lock()
        registry = FunctionRegistry(None)
        registry.register("work", self.work, concurrency=workers)
        self.engine = local_engine(conninfo, registry=registry, workers=workers)
        self.engine.start()
        with self.engine.read() as store:
            self.fan_out = machines.create(
                store, self.engine.arns, name="fan-out", definition=fan_out_definition()
            )["stateMachineArn"]
            self.chain = machines.create(
                store, self.engine.arns, name="small", definition=chain_definition()
            )["stateMachineArn"]
        self.count = 0

    def work(self, event: Any, context: Any) -> dict[str, Any]:
        with self._lock:
            self.started += 1
        time.sleep(self.task_seconds)
        return {}

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}-{self.count}"

    def alone(self) -> float:
        """The small run with nothing else running (ms)."""
        begun = time.perf_counter()
        arn = self.engine.submit(
            StartExecution(self.chain, self.name("alone"), {"priority": "normal"})
        )["executionArn"]
        assert self.engine.wait(arn, timeout=120) == "SUCCEEDED"
        return (time.perf_counter() - begun) * 1000

    def contended(self, mode: str, fan_outs: int) -> tuple[float, float]:
        """(small run's latency, fan-outs' makespan) in ms, with `fan_outs` fan-outs queued."""
        ready = self.engine._dispatcher._ready  # to see the fan-outs queued
        ready.fair = mode != "arrival"  # arrival: the order before priorities
        begun = time.perf_counter()
        arns = [
            self.engine.submit(
                StartExecution(
                    self.fan_out,
                    self.name("fan"),
                    {"items": list(range(BRANCHES)), "priority": "normal"},
                )
            )["executionArn"]
            for _ in range(fan_outs)
        ]
        deadline = time.monotonic() + 60
        while len(ready) < fan_outs * BRANCHES // 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        small_started = time.perf_counter()
        priority = "high" if mode == "priority" else "normal"
        small = self.engine.submit(
            StartExecution(self.chain, self.name("small"), {"priority": priority})
        )["executionArn"]
        assert self.engine.wait(small, timeout=300) == "SUCCEEDED"
        latency = (time.perf_counter() - small_started) * 1000
        for arn in arns:
            assert self.engine.wait(arn, timeout=300) == "SUCCEEDED"
        return latency, (time.perf_counter() - begun) * 1000

    def close(self) -> None:
        self.engine.close()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--task-ms", type=float, default=50.0)
    parser.add_argument("--fan-outs", default="1,4", help="comma-separated counts of fan-outs")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    counts = [int(n) for n in args.fan_outs.split(",")]
    results: dict[str, Any] = {"alone_ms": [], "contended": {}}
    for _ in range(args.repeats):
        with fresh_database(args.server, "bench_fairness") as url:
            bench = Bench(url, workers=args.workers, task_ms=args.task_ms)
            try:
                bench.alone()  # warm-up: handlers loaded, machines parsed
                results["alone_ms"].append(bench.alone())
                for count in counts:
                    for mode in MODES:
                        latency, makespan = bench.contended(mode, count)
                        cell = results["contended"].setdefault(f"{count}:{mode}", [[], []])
                        cell[0].append(latency)
                        cell[1].append(makespan)
            finally:
                bench.close()
    print(
        f"small run: {CHAIN} tasks in a row; fan-out: {BRANCHES} tasks at once; every task "
        f"{args.task_ms:g} ms; {args.workers} workers; median of {args.repeats}"
    )
    print(f"small run alone: {statistics.median(results['alone_ms']):.0f} ms")
    print()
    print(f"{'fan-outs':>8}  {'dispatch':<9} {'small run ms':>13} {'fan-outs done ms':>17}")
    for count in counts:
        for mode in MODES:
            latencies, makespans = results["contended"][f"{count}:{mode}"]
            print(
                f"{count:>8}  {mode:<9} {statistics.median(latencies):>13.0f} "
                f"{statistics.median(makespans):>17.0f}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
