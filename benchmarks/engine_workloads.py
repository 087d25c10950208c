"""Switchyard's side of `benchmarks/engine.py`: the engine in this process, driven through its
public commands, on a fresh database.

Every workload uses hand-written ASL: a chain of `arn:aws:states:::lambda:invoke` Tasks calling a
registered no-op function (`OutputPath: $.Payload`, as Workflow Studio writes them), or one
`.waitForTaskToken` Task for the human gate. Each transition commits its history events, frames,
task rows and execution row in one PostgreSQL transaction before anything follows from it.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from switchyard.engine import machines
from switchyard.engine.commands import Callback, Command, StartExecution
from switchyard.engine.dispatch.registry import FunctionRegistry
from switchyard.local.stack import local_engine

LAMBDA = "arn:aws:states:::lambda:invoke"
CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken"


def chain_definition(steps: int) -> str:
    """`steps` no-op Lambda tasks in a row."""
    states: dict[str, Any] = {}
    for index in range(steps):
        state: dict[str, Any] = {
            "Type": "Task",
            "Resource": LAMBDA,
            "Parameters": {
                "FunctionName": "noop",
                "Payload": {"step": index, "run.$": "$$.Execution.Name"},
            },
            "OutputPath": "$.Payload",
        }
        if index + 1 < steps:
            state["Next"] = f"Step{index + 1}"
        else:
            state["End"] = True
        states[f"Step{index}"] = state
    return json.dumps({"Comment": f"{steps} no-op steps", "StartAt": "Step0", "States": states})


def gate_definition() -> str:
    """One human gate: the task token goes to a notify function, the run waits for it."""
    return json.dumps(
        {
            "Comment": "a run parked at a human gate",
            "StartAt": "Gate",
            "States": {
                "Gate": {
                    "Type": "Task",
                    "Resource": CALLBACK,
                    "Parameters": {
                        "FunctionName": "notify",
                        "Payload": {"token.$": "$$.Task.Token"},
                    },
                    "End": True,
                }
            },
        }
    )


@dataclass
class StepMarks:
    """When each no-op task's handler was entered and left, per execution name."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    marks: dict[str, list[tuple[int, float, float]]] = field(default_factory=dict)

    def noop(self, event: Any, context: Any) -> dict[str, Any]:
        entered = time.perf_counter()
        run = str(event.get("run", "")) if isinstance(event, dict) else ""
        step = int(event.get("step", -1)) if isinstance(event, dict) else -1
        left = time.perf_counter()
        with self.lock:
            self.marks.setdefault(run, []).append((step, entered, left))
        return {}

    def gaps_ms(self, run: str) -> list[float]:
        """From a task's handler returning to the next task's handler being called."""
        ordered = sorted(self.marks.get(run, []))
        return [(nxt[1] - cur[2]) * 1000 for cur, nxt in itertools.pairwise(ordered)]


class SwitchyardBench:
    """An engine with the benchmark's functions and machines, on one database."""

    def __init__(self, conninfo: str, *, workers: int = 16) -> None:
        self.conninfo = conninfo
        self.steps = StepMarks()
        self.tokens: list[str] = []
        self._tokens_lock = threading.Lock()
        registry = FunctionRegistry(None)
        registry.register("noop", self.steps.noop)
        registry.register("notify", self._notify)
        self.engine = local_engine(conninfo, registry=registry, workers=workers)
        self.machine_arns: dict[str, str] = {}

    def _notify(self, event: Any, context: Any) -> dict[str, Any]:
        with self._tokens_lock:
            self.tokens.append(str(event["token"]))
        return {}

    def start(self) -> None:
        self.engine.start()
        definitions = {
            "chain10": chain_definition(10),
            "chain3": chain_definition(3),
            "gate": gate_definition(),
        }
        with self.engine.read() as store:
            for name, definition in definitions.items():
                created = machines.create(store, self.engine.arns, name=name, definition=definition)
                self.machine_arns[name] = created["stateMachineArn"]

    def close(self) -> None:
        self.engine.close()

    # --- one run at a time -------------------------------------------------------------------

    def run_once(self, machine: str, name: str) -> float:
        """Start → done, as a client of the engine sees it (ms)."""
        started = time.perf_counter()
        arn = self.engine.submit(StartExecution(self.machine_arns[machine], name, {}))[
            "executionArn"
        ]
        status = self.engine.wait(arn, timeout=60)
        elapsed = (time.perf_counter() - started) * 1000
        if status != "SUCCEEDED":
            raise RuntimeError(f"{arn} ended {status}")
        return elapsed

    def step_to_step(self, *, runs: int, warmup: int) -> list[float]:
        """(a) Gaps between consecutive no-op tasks of the 10-step chain, one run at a time."""
        for i in range(warmup):
            self.run_once("chain10", f"a-warmup-{i}")
        gaps: list[float] = []
        for i in range(runs):
            name = f"a-{i}"
            self.run_once("chain10", name)
            gaps += self.steps.gaps_ms(name)
        return gaps

    def end_to_end(self, *, runs: int, warmup: int, prefix: str = "b") -> list[float]:
        """(b) The 3-step chain, start → done, one run at a time."""
        for i in range(warmup):
            self.run_once("chain3", f"{prefix}-warmup-{i}")
        return [self.run_once("chain3", f"{prefix}-{i}") for i in range(runs)]

    # --- many at once ------------------------------------------------------------------------

    def post_all(self, commands: list[Command]) -> list[Future[Any]]:
        """Enqueue every command without waiting (the API's threads do the same per request)."""
        futures: list[Future[Any]] = []
        for command in commands:
            future: Future[Any] = Future()
            command.reply = future
            futures.append(future)
            self.engine.post(command)
        return futures

    def burst(self, count: int, *, prefix: str) -> dict[str, Any]:
        """(c) `count` 3-step runs started at once; seconds until every one has ended."""
        arn = self.machine_arns["chain3"]
        names = [f"{prefix}-{i}" for i in range(count)]
        with self._watch() as watch:
            begun = time.perf_counter()
            begun_wall = time.time()
            futures = self.post_all([StartExecution(arn, name, {}) for name in names])
            wait(futures, timeout=120)
            accepted = time.perf_counter() - begun
            _poll(lambda: watch.count("SUCCEEDED", prefix) >= count, timeout=300)
            seconds = time.perf_counter() - begun
        with psycopg.connect(self.conninfo) as conn:
            rows = conn.execute(
                "SELECT EXTRACT(EPOCH FROM started_at), EXTRACT(EPOCH FROM stopped_at)"
                " FROM sfn_executions WHERE name LIKE %s",
                (f"{prefix}-%",),
            ).fetchall()
        per_run = [(float(stop) - begun_wall) * 1000 for _, stop in rows]
        return {
            "workflows": count,
            "seconds": seconds,
            "per_second": count / seconds,
            "all_accepted_s": accepted,
            "done_since_burst_ms": per_run,
        }

    def park_and_release(
        self, count: int, *, prefix: str = "d", on_parked: Any = None
    ) -> dict[str, Any]:
        """(d) `count` runs parked at a human gate, then each released with its token.

        Parked means the gate's notify function has run and the run waits for its token
        (`TaskSubmitted` committed); released means every run has SUCCEEDED.
        """
        arn = self.machine_arns["gate"]
        self.tokens.clear()
        with self._watch() as watch:
            already = watch.submitted()
            begun = time.perf_counter()
            futures = self.post_all(
                [StartExecution(arn, f"{prefix}-{i}", {}) for i in range(count)]
            )
            wait(futures, timeout=600)
            _poll(lambda: watch.submitted() - already >= count, timeout=900, every=0.05)
            park_s = time.perf_counter() - begun
            parked = {"running_when_parked": watch.count("RUNNING", prefix)}
            if on_parked is not None:
                parked.update(on_parked())
            released = time.perf_counter()
            futures = self.post_all(
                [Callback(token, "success", output={"ok": True}) for token in self.tokens]
            )
            wait(futures, timeout=600)
            errors = sum(1 for future in futures if future.exception() is not None)
            _poll(lambda: watch.count("SUCCEEDED", prefix) >= count, timeout=900, every=0.05)
            release_s = time.perf_counter() - released
        return {
            "runs": count,
            "park_s": park_s,
            "release_s": release_s,
            "callback_errors": errors,
            **parked,
        }

    @contextmanager
    def _watch(self) -> Iterator[_Watch]:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            yield _Watch(conn)


class _Watch:
    """A connection of its own that counts executions (not the engine's connections)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def count(self, status: str, prefix: str) -> int:
        row = self._conn.execute(
            "SELECT count(*) FROM sfn_executions WHERE status = %s AND name LIKE %s",
            (status, f"{prefix}-%"),
        ).fetchone()
        return int(row[0]) if row else 0

    def submitted(self) -> int:
        """Callback tasks whose notify function has run: the run now waits for its token."""
        row = self._conn.execute(
            "SELECT count(*) FROM sfn_history WHERE type = 'TaskSubmitted'"
        ).fetchone()
        return int(row[0]) if row else 0


def _poll(done: Any, *, timeout: float, every: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the engine did not finish in time")
        time.sleep(every)
