"""Benchmark: load and validate a generated 1,000-step workflow.

    .venv/bin/python benchmarks/validate.py [--steps 1000] [--runs 20]

Prints the median and p99 wall time of load + validate. Goal: median under 150 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_workflow

from switchyard.conditions.parser import parse_condition, parse_path
from switchyard.templates.references import template_info
from switchyard.validate import validate_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    text = synthetic_workflow(args.steps)
    timings: list[float] = []
    for _ in range(args.runs):
        for cache in (template_info, parse_condition, parse_path):
            cache.cache_clear()  # measure a cold validation, not a cached one
        started = time.perf_counter()
        result = validate_text(text, file="synthetic.yaml")
        timings.append((time.perf_counter() - started) * 1000)
        if not result.ok:
            raise SystemExit("\n".join(d.format() for d in result.diagnostics[:10]))
    timings.sort()
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    print(
        f"validate {args.steps} steps ({len(text) // 1024} KiB): "
        f"median {statistics.median(timings):.1f} ms, p99 {p99:.1f} ms, runs {args.runs} "
        "(goal: median < 150 ms)"
    )


if __name__ == "__main__":
    main()
