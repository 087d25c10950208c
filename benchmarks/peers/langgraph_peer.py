"""LangGraph: the 3-step workflow as a graph of three no-op nodes with the PostgreSQL checkpointer.

Run by `benchmarks/engine.py` with the peers' interpreter:

    PEERS/bin/python benchmarks/peers/langgraph_peer.py --server postgresql://postgres@127.0.0.1:5432

What LangGraph persists, with `durability="sync"` (each checkpoint committed before the next step
runs — the closest to a durable step): a checkpoint per super-step (the input, then one after
each node: rows in `checkpoints` and `checkpoint_blobs`) and each node's pending writes
(`checkpoint_writes`), on a fresh database of the same PostgreSQL. LangGraph is a library, not a
service: there is no queue or worker; a "start" is an `invoke`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, fresh_database, peer_arguments, summary, timed_runs
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

POOL_SIZE = 16


class State(TypedDict):
    value: int
    steps: int


def noop(state: State) -> dict[str, int]:
    return {"steps": state["steps"] + 1}


def graph() -> StateGraph[State]:
    builder = StateGraph(State)
    for name in ("step1", "step2", "step3"):
        builder.add_node(name, noop)
    builder.add_edge(START, "step1")
    builder.add_edge("step1", "step2")
    builder.add_edge("step2", "step3")
    builder.add_edge("step3", END)
    return builder


def latency(url: str, runs: int, warmup: int) -> dict[str, list[float]]:
    modes: dict[str, list[float]] = {}
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        app = graph().compile(checkpointer=saver)
        for durability in ("sync", "async"):

            def run(name: str, durability: Any = durability) -> None:
                config = {"configurable": {"thread_id": f"{durability}-{name}"}}
                out = app.invoke({"value": 1, "steps": 0}, config, durability=durability)
                assert out["steps"] == 3

            modes[durability] = timed_runs(run, runs=runs, warmup=warmup)
    return modes


async def burst(url: str, concurrent: int) -> float:
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(
        url, min_size=POOL_SIZE, max_size=POOL_SIZE, kwargs=kwargs
    ) as pool:
        app = graph().compile(checkpointer=AsyncPostgresSaver(pool))  # type: ignore[arg-type]
        warm = [
            app.ainvoke(
                {"value": 0, "steps": 0},
                {"configurable": {"thread_id": f"w{i}"}},
                durability="sync",
            )
            for i in range(20)
        ]
        await asyncio.gather(*warm)
        begun = time.perf_counter()
        runs = [
            app.ainvoke(
                {"value": i, "steps": 0},
                {"configurable": {"thread_id": f"burst-{i}"}},
                durability="sync",
            )
            for i in range(concurrent)
        ]
        results = await asyncio.gather(*runs)
        seconds = time.perf_counter() - begun
        assert all(r["steps"] == 3 for r in results)
    return seconds


def main() -> None:
    args = peer_arguments(__doc__.splitlines()[0])
    with fresh_database(args.server, "bench_langgraph") as url:
        modes = latency(url, args.runs, args.warmup)
        seconds = asyncio.run(burst(url, args.concurrent))
    emit(
        {
            "peer": "langgraph",
            "version": version("langgraph"),
            "e2e": summary(modes["sync"]),
            "e2e_modes": {
                'durability="sync"': summary(modes["sync"]),
                'durability="async" (default; not durable per step)': summary(modes["async"]),
            },
            "throughput": {
                "workflows": args.concurrent,
                "seconds": seconds,
                "per_second": args.concurrent / seconds,
            },
            "how": "StateGraph START→step1→step2→step3→END, PostgresSaver,"
            ' invoke(durability="sync");'
            f" burst: asyncio.gather of N ainvoke on AsyncPostgresSaver with a pool of {POOL_SIZE}",
            "persists": "a checkpoint per super-step (checkpoints + checkpoint_blobs) and each"
            " node's writes (checkpoint_writes), committed before the next step",
        }
    )


if __name__ == "__main__":
    main()
