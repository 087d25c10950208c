"""Benchmark: the examples' happy paths on the local engine, as compiled now and at a revision.

    .venv/bin/python benchmarks/examples_on_engine.py --base 7a01e27 [--runs 30]

Runs content-moderation (routed to the rewrite) and summarize-document, start to end, on one
engine in a fresh database, alternating the machines committed in `statemachines/` at `--base`
with the working tree's, so that load from other work falls on both alike. The step functions
play a script (tests/scenarios/harness); run_start and render are the real ones. Prints the
median and p90 per machine. What it shows: a machine with fewer states on its happy path runs
no slower on the engine (docs/compiler.md, Machine size).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from switchyard.engine import machines  # noqa: E402
from switchyard.engine.commands import StartExecution  # noqa: E402
from switchyard.engine.substitution import local_values, substitute  # noqa: E402
from switchyard.local.stack import local_engine  # noqa: E402
from tests.scenarios.harness.engine_runner import scripted_registry  # noqa: E402
from tests.scenarios.harness.scripted import ScriptedFunctions  # noqa: E402

RUNS: dict[str, tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]] = {
    "content-moderation": (
        {"content_id": "c1", "author_id": "a1", "text": "you are wrong"},
        {
            "score": [{"output": {"toxicity": 0.5, "categories": ["none"]}}],
            "borderline": [{"route": "refine"}],
            "refine": [{"output": {"text": "I disagree", "toxicity": 0.1}}],
            "publish": [{"output": {"status": 200, "headers": {}, "body": "ok"}}],
        },
    ),
    "summarize-document": (
        {"document": {"id": "d1", "url": "https://docs.example.com/d1"}},
        {
            "fetch": [{"output": {"status": 200, "headers": {}, "body": "text"}}],
            "summarize": [{"output": {"summary": "s", "key_points": [], "risk_level": "low"}}],
        },
    ),
}
"""Per example: its input, and its script (the same answer every run)."""
WARMUP = 3


def definition(name: str, rev: str | None) -> str:
    path = f"statemachines/{name}.asl.json"
    if rev is None:
        return (REPO / path).read_text()
    shown = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:{path}"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return shown.stdout


def measure(conninfo: str, name: str, base: str, runs: int) -> dict[str, list[float]]:
    inputs, script = RUNS[name]
    functions = ScriptedFunctions(script)  # one answer per step: every call plays it
    engine = local_engine(conninfo, registry=scripted_registry(functions))
    engine.start()
    timings: dict[str, list[float]] = {base: [], "now": []}
    try:
        arns = {}
        with engine.read() as store:
            for label, rev in ((base, base), ("now", None)):
                text, missing = substitute(definition(name, rev), local_values(engine.arns, []))
                assert not missing, missing
                created = machines.create(
                    store, engine.arns, name=f"{name}-{label}", definition=text
                )
                arns[label] = created["stateMachineArn"]
        for index in range(runs + WARMUP):
            for label in (base, "now") if index % 2 else ("now", base):
                started = time.perf_counter()
                out = engine.submit(StartExecution(arns[label], f"run-{label}-{index}", inputs))
                status = engine.wait(out["executionArn"], timeout=60)
                elapsed = (time.perf_counter() - started) * 1000
                if status != "SUCCEEDED":
                    raise RuntimeError(f"{name} at {label} ended {status}")
                if index >= WARMUP:
                    timings[label].append(elapsed)
    finally:
        engine.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    database = f"bench_examples_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    try:
        for name in RUNS:
            for label, values in measure(
                f"{args.server}/{database}", name, args.base, args.runs
            ).items():
                ordered = sorted(values)
                print(
                    f"{name:20} {label:10} median {statistics.median(values):7.1f} ms  "
                    f"p90 {ordered[int(len(ordered) * 0.9) - 1]:7.1f} ms  ({len(values)} runs)"
                )
    finally:
        with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


if __name__ == "__main__":
    main()
