"""DBOS Transact: the 3-step workflow as a `@DBOS.workflow` calling three `@DBOS.step`s.

Run by `benchmarks/engine.py` with the peers' interpreter:

    PEERS/bin/python benchmarks/peers/dbos_peer.py --server postgresql://postgres@127.0.0.1:5432

What DBOS persists: its system database (a fresh one on the same PostgreSQL) gets one
`workflow_status` row when the workflow starts (its inputs), one `operation_outputs` row per
step as the step returns (its output, committed before the next step starts), and the
workflow's status and output at the end — each in its own transaction, with the server's
`synchronous_commit`.
"""

from __future__ import annotations

import logging
import sys
import time
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, fresh_database, peer_arguments, summary, timed_runs
from dbos import DBOS, DBOSConfig, SetWorkflowID


@DBOS.step()
def noop(step: int) -> dict[str, int]:
    return {"step": step}


@DBOS.workflow()
def three_steps(value: int) -> int:
    noop(1)
    noop(2)
    noop(3)
    return value


def main() -> None:
    args = peer_arguments(__doc__.splitlines()[0])
    logging.getLogger("dbos").setLevel(logging.WARNING)
    with fresh_database(args.server, "bench_dbos") as url:
        config: DBOSConfig = {"name": "switchyard-bench", "system_database_url": url}
        config["log_level"] = "WARNING"
        DBOS(config=config)
        DBOS.launch()
        try:
            result = measure(args.runs, args.warmup, args.concurrent)
        finally:
            DBOS.destroy(destroy_registry=True)
    emit(result)


def measure(runs: int, warmup: int, concurrent: int) -> dict[str, object]:
    def direct(name: str) -> None:  # the workflow function called: runs in this thread
        with SetWorkflowID(f"direct-{name}"):
            three_steps(1)

    def started(name: str) -> None:  # started in the background, then awaited
        with SetWorkflowID(f"started-{name}"):
            DBOS.start_workflow(three_steps, 1).get_result()

    started_ms = timed_runs(started, runs=runs, warmup=warmup)
    direct_ms = timed_runs(direct, runs=runs, warmup=warmup)

    begun = time.perf_counter()
    handles = []
    for i in range(concurrent):
        with SetWorkflowID(f"burst-{i}"):
            handles.append(DBOS.start_workflow(three_steps, i))
    for handle in handles:
        handle.get_result()
    seconds = time.perf_counter() - begun
    modes = {"direct call": summary(direct_ms), "start_workflow": summary(started_ms)}
    best = min(modes, key=lambda mode: modes[mode]["p50_ms"])  # DBOS at its faster path
    return {
        "peer": "dbos",
        "version": version("dbos"),
        "e2e": modes[best],
        "e2e_modes": modes,
        "throughput": {
            "workflows": concurrent,
            "seconds": seconds,
            "per_second": concurrent / seconds,
        },
        "how": "a @DBOS.workflow calling three @DBOS.step no-ops; latency: the workflow called"
        f" directly or through DBOS.start_workflow, whichever was faster ({best});"
        " burst: DBOS.start_workflow x N, then every get_result()",
        "persists": "workflow_status row at start and end, one operation_outputs row per step"
        " (each its own transaction) in DBOS's system database on the same PostgreSQL",
    }


if __name__ == "__main__":
    main()
