"""Cold-start import time of each function's handler, from a layer without and with byte-code.

Lambda mounts the layer read-only at /opt/python, so a layer of sources is compiled on every cold
start; `infra/layer_build.py` compiles it at build time instead (`compileall --invalidation-mode
unchecked-hash`). This builds the layer's packages (the versions pinned in
`infra/layer/requirements.lock`) and the library for *this* interpreter and platform, then imports
each `functions/<name>/handler.py` in a fresh interpreter, `--runs` times, with nothing cached
(`PYTHONDONTWRITEBYTECODE=1`, `-S`: the layer is the only site), first from sources, then after
compiling the layer the way the build does. It prints the median CPU time of the import (on a
busy machine wall time mostly measures the other processes; on Lambda a cold start's import is
CPU-bound, at the CPU share its memory buys), its wall time, and the peak resident memory after
the import.

    .venv/bin/python benchmarks/layer_import.py             # about 2 minutes, needs PyPI once
    .venv/bin/python benchmarks/layer_import.py --runs 11 --keep /tmp/layer-bench
    .venv/bin/python benchmarks/layer_import.py --python "$(pyenv prefix 3.13)/bin/python3.13"

`--python` measures another interpreter (default: this one): the layer is built with its pip and
compiled and imported by it. The layer deployed is for CPython 3.13 on arm64; this measures the
same packages and code with the chosen Python on this machine's CPU and platform (x86_64 here), so
the numbers are this machine's, for comparing the two layers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from infra import layer_build  # noqa: E402

PROBE = """
import resource, sys, time
sys.path[:0] = [{handler!r}, {layer!r}]
started, cpu = time.perf_counter(), time.process_time()
import handler
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
print(elapsed, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
ENVIRONMENT = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "benchmark",
    "POWERTOOLS_METRICS_NAMESPACE": "switchyard",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def build_local_layer(folder: Path, python: str) -> Path:
    """The lock's packages for `python` (no byte-code), and the library."""
    target = folder / "python"
    pinned = [
        line.split(" ")[0] for line in layer_build.requirements(layer_build.REQUIREMENTS_LOCK)
    ]
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "--quiet",
            "install",
            "--no-deps",
            "--no-compile",
            "--only-binary=:all:",
            "--target",
            str(target),
            *pinned,
        ],
        check=True,
    )
    layer_build._copy_library(ROOT, target)
    return target


def measure(handler: Path, layer: Path, runs: int, python: str) -> tuple[float, float, float]:
    """Median import wall and CPU seconds and peak memory (MB) of `handler` over `runs` fresh
    processes."""
    times, cpus, memory = [], [], []
    for _ in range(runs):
        output = subprocess.run(
            [python, "-S", "-c", PROBE.format(handler=str(handler), layer=str(layer))],
            capture_output=True,
            text=True,
            check=True,
            env={"PATH": os.environ.get("PATH", ""), **ENVIRONMENT},
        ).stdout.split()
        times.append(float(output[0]))
        cpus.append(float(output[1]))
        memory.append(int(output[2]) / 1024)
    return statistics.median(times), statistics.median(cpus), statistics.median(memory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the layer here and keep it")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--only", help="comma-separated function folders (default: all)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to measure")
    args = parser.parse_args()
    python = args.python
    folder = args.keep or Path(tempfile.mkdtemp(prefix="layer-bench-"))
    layer = folder / "python"
    if not layer.is_dir():
        build_local_layer(folder, python)
    for cache in layer.rglob("__pycache__"):
        subprocess.run(["rm", "-rf", str(cache)], check=True)
    handlers = sorted(p.parent for p in (ROOT / "functions").glob("*/handler.py"))
    if args.only:
        handlers = [h for h in handlers if h.name in args.only.split(",")]
    results: dict[str, dict[str, float]] = {}
    for name, prepare in (("sources", None), ("bytecode", layer_build.compile_bytecode)):
        if prepare is not None:
            prepare(layer, python)
        for handler in handlers:
            seconds, cpu, megabytes = measure(handler, layer, args.runs, python)
            row = results.setdefault(handler.name, {})
            row[f"{name}_ms"] = round(seconds * 1000, 1)
            row[f"{name}_cpu_ms"] = round(cpu * 1000, 1)
            row[f"{name}_rss_mb"] = round(megabytes, 1)
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"Python {version} on {os.uname().machine}, median of {args.runs} runs")
    print(
        f"{'function':<18}{'CPU ms, sources':>16}{'bytecode':>10}{'saved':>7}"
        f"{'wall ms, sources':>18}{'bytecode':>10}{'RSS MB':>8}"
    )
    for function, row in results.items():
        saved = 1 - row["bytecode_cpu_ms"] / row["sources_cpu_ms"]
        print(
            f"{function:<18}{row['sources_cpu_ms']:>16}{row['bytecode_cpu_ms']:>10}{saved:>7.0%}"
            f"{row['sources_ms']:>18}{row['bytecode_ms']:>10}{row['bytecode_rss_mb']:>8}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
