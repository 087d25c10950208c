"""Benchmark: compile a generated 1,000-step workflow to Amazon States Language.

    .venv/bin/python benchmarks/compile.py [--steps 1000] [--runs 20]

Prints the median and p99 of compile time (validation excluded) and the definition's size.
Goal: median under 500 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_workflow

from switchyard.compile import compile_workflow
from switchyard.validate import validate_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    result = validate_text(synthetic_workflow(args.steps), file="synthetic.yaml")
    if result.workflow is None:
        raise SystemExit("\n".join(d.format() for d in result.diagnostics[:10]))
    timings: list[float] = []
    compiled = None
    for _ in range(args.runs):
        started = time.perf_counter()
        compiled = compile_workflow(result.workflow)
        text = compiled.text
        timings.append((time.perf_counter() - started) * 1000)
    assert compiled is not None
    timings.sort()
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    states = len(compiled.definition["States"])
    print(
        f"compile {args.steps} steps: median {statistics.median(timings):.1f} ms, "
        f"p99 {p99:.1f} ms, runs {args.runs}; {len(text) // 1024} KiB, {states} top-level "
        f"states, {len(compiled.notes)} notes (goal: median < 500 ms)"
    )


if __name__ == "__main__":
    main()
