"""Benchmark: REST API submission latency, `POST /workflows/{name}/runs`, on `switchyard dev`.

    .venv/bin/python benchmarks/api.py [--requests 500] [--warmup 30] [--clients 8]

Starts `switchyard dev --port 0` as its own process on a fresh database (the client is this
process, so the two do not share a GIL), with one trivial workflow installed: a single tool step
answered by a script (`X-Switchyard-LLM-Script`), so no tool or model is called. Over one
keep-alive connection it times, one request at a time:

  (1) POST a new run, no Idempotency-Key (the runs then execute in the background engine);
  (2) POST a new run with a fresh Idempotency-Key (one more query: is the key used?);
  (3) POST again with a used key and the same body (200, the run already started);
  (4) GET /runs/{id} of a finished run.

Then (5) `--clients` threads, each with its own connection, POST new runs at once: latency and
submissions per second. Prints medians and nearest-rank p99s. Goal (seed): submission < 200 ms.
PostgreSQL: `--server` (default postgresql://postgres@127.0.0.1:5432). Not a CI test.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from peers.common import DEFAULT_SERVER, fresh_database, summary

GOAL_MS = 200.0
WORKFLOW = """\
switchyard: 1
name: noop
version: 1
inputs:
  n: {type: integer, default: 0}
steps:
  touch:
    type: tool
    tool: http.request
    args: {method: GET, url: "https://example.com/{{ inputs.n }}"}
"""
SCRIPT = "touch:\n  - {output: {status: 200, headers: {}, body: null}}\n"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=DEFAULT_SERVER, help="PostgreSQL server URL")
    parser.add_argument("--requests", type=int, default=500, help="measured requests per part")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured requests first")
    parser.add_argument("--clients", type=int, default=8, help="(5): concurrent clients")
    return parser.parse_args()


def start_dev(database_url: str, directory: Path) -> tuple[subprocess.Popen[str], str]:
    """`switchyard dev` on free ports; (process, REST API URL) once it serves."""
    env = {**os.environ, "DATABASE_URL": database_url, "SWITCHYARD_HOME": str(directory)}
    env.pop("SWITCHYARD_API_TOKEN", None)
    command = [str(Path(sys.executable).parent / "switchyard"), "dev", "--port", "0"]
    command += ["--sfn-port", "0", "--workflows", str(directory / "workflows")]
    dev = subprocess.Popen(
        command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert dev.stderr is not None
        for line in dev.stderr:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if dev.poll() is not None:
                raise SystemExit(f"switchyard dev exited ({dev.returncode})") from None
            continue
        if line.startswith("REST API: "):
            return dev, line.split()[2]
    dev.kill()
    raise SystemExit("switchyard dev did not start in 120 s")


def timed(call: Callable[[int], httpx.Response], count: int, status: int) -> list[float]:
    samples = []
    for n in range(count):
        started = time.perf_counter()
        answer = call(n)
        samples.append((time.perf_counter() - started) * 1000)
        if answer.status_code != status:
            raise SystemExit(f"expected {status}, got {answer.status_code}: {answer.text}")
    return samples


def concurrent(
    url: str, headers: dict[str, str], clients: int, total: int
) -> tuple[list[float], float]:
    """(latencies, submissions per second) of `total` POSTs from `clients` threads at once."""
    local = threading.local()

    def post(n: int) -> float:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=url, headers=headers, timeout=60)
        started = time.perf_counter()
        answer = local.client.post("/workflows/noop/runs", json={"n": n})
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status_code != 201:
            raise SystemExit(f"expected 201, got {answer.status_code}: {answer.text}")
        return elapsed

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        samples = list(pool.map(post, range(total)))
    return samples, total / (time.perf_counter() - started)


def line(label: str, samples: list[float]) -> str:
    numbers = summary(samples)
    verdict = "ok" if numbers["p99_ms"] < GOAL_MS else "OVER GOAL"
    return (
        f"  {label:<44} median {numbers['p50_ms']:7.2f} ms   p99 {numbers['p99_ms']:7.2f} ms"
        f"   (n={numbers['n']}, {verdict})"
    )


def main() -> None:
    args = arguments()
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    with tempfile.TemporaryDirectory() as tmp, fresh_database(args.server, "bench_api") as url:
        directory = Path(tmp)
        (directory / "workflows").mkdir()
        (directory / "workflows" / "noop.yaml").write_text(WORKFLOW)
        (directory / "workflows" / "scripts").mkdir()  # the server's scripts directory
        (directory / "workflows" / "scripts" / "noop-script.yaml").write_text(SCRIPT)
        headers = {"X-Switchyard-LLM-Script": "noop-script.yaml"}
        dev, base = start_dev(url, directory)
        try:
            with httpx.Client(base_url=base, headers=headers, timeout=60) as client:

                def post(n: int, key: str | None = None) -> httpx.Response:
                    extra = {"Idempotency-Key": key} if key else {}
                    return client.post("/workflows/noop/runs", json={"n": n}, headers=extra)

                timed(post, args.warmup, 201)
                plain = timed(post, args.requests, 201)
                keys = [f"bench-{uuid.uuid4().hex}" for _ in range(args.requests)]
                keyed = timed(lambda n: post(n, keys[n]), args.requests, 201)
                repeated = timed(lambda n: post(n, keys[n]), args.requests, 200)
                done = keys[0]
                shown = timed(lambda n: client.get(f"/runs/{done}"), args.requests, 200)
            together, rate = concurrent(base, headers, args.clients, args.requests)
        finally:
            dev.send_signal(signal.SIGTERM)
            dev.wait(timeout=60)
    print(f"POST /workflows/noop/runs on switchyard dev (goal: under {GOAL_MS:.0f} ms)")
    print(line("(1) new run", plain))
    print(line("(2) new run, fresh Idempotency-Key", keyed))
    print(line("(3) repeated Idempotency-Key (200)", repeated))
    print(line("(4) GET /runs/{id}", shown))
    print(line(f"(5) new run, {args.clients} clients at once", together))
    print(f"      {rate:.0f} submissions/s with {args.clients} clients")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
