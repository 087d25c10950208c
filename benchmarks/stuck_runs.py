"""How long `switchyard runs list --stuck` takes when many runs are open and idle.

    .venv/bin/python benchmarks/stuck_runs.py [--gated 10000] [--backoff 10000] [--hung 1000]
                                              [--ended 100000] [--server postgresql://...]

On a fresh database it writes the rows the engine would have written (runs and executions, ten
history events each, frames, tasks in flight, timers, open gates), all idle for an hour: runs
parked at a gate (a task token an open gate holds), runs in a retry's backoff (a timer an hour
ahead), runs whose step function hangs (a task with no timer), and ended runs beside them. Then it
times `stuck_runs` with the default threshold: every open run is a candidate, and only the hung
ones are stuck. Prints the median and worst of 5 calls, and what was found.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import psycopg
from psycopg import sql

from switchyard.local.stuck import stuck_runs
from switchyard.stores.migrate import apply_migrations

FILL_SQL = """
INSERT INTO sfn_definitions (hash, definition) VALUES ('bench', '{}');
INSERT INTO sfn_state_machines (arn, name, definition_hash, revision_id)
VALUES ('arn:aws:states:us-east-1:000000000000:stateMachine:bench', 'bench', 'bench', 'r1');

INSERT INTO sfn_executions (id, arn, machine_arn, definition_hash, name, status, started_at)
SELECT n, 'arn:aws:states:us-east-1:000000000000:execution:bench:r' || n,
       'arn:aws:states:us-east-1:000000000000:stateMachine:bench', 'bench', 'r' || n,
       CASE WHEN n <= %(open)s THEN 'RUNNING' ELSE 'SUCCEEDED' END, now() - interval '1 hour'
  FROM generate_series(1, %(all)s) n;

INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version, status, started_at)
SELECT n, 'r' || n, 'bench', 1,
       CASE WHEN n <= %(gated)s THEN 'waiting' WHEN n <= %(open)s THEN 'running'
            ELSE 'succeeded' END,
       now() - interval '1 hour'
  FROM generate_series(1, %(all)s) n;

INSERT INTO sfn_history (execution_id, event_id, previous_event_id, type, at, details)
SELECT n, e, e - 1, 'TaskStateEntered', now() - interval '1 hour' + e * interval '1 ms', '{}'
  FROM generate_series(1, %(all)s) n, generate_series(1, 10) e;

INSERT INTO sfn_frames (execution_id, frame_id, status, data)
SELECT n, 1, 'task', '{"state": "step"}' FROM generate_series(1, %(open)s) n;

-- gated: a callback task and its open gate
INSERT INTO sfn_tasks (execution_id, frame_id, attempt, kind, resource, token)
SELECT n, 1, 1, 'callback', 'arn:aws:states:::lambda:invoke.waitForTaskToken', 't' || n
  FROM generate_series(1, %(gated)s) n;
INSERT INTO gates (id, run_id, execution_arn, workflow, step_id, kind, token, status)
SELECT 'g' || n, 'r' || n, 'arn:aws:states:us-east-1:000000000000:execution:bench:r' || n,
       'bench', 'step', 'approval', 't' || n, 'open'
  FROM generate_series(1, %(gated)s) n;

-- in a backoff: a retry timer an hour ahead
INSERT INTO sfn_timers (execution_id, frame_id, kind, attempt, fire_at)
SELECT n, 1, 'retry', 1, now() + interval '1 hour'
  FROM generate_series(%(gated)s + 1, %(gated)s + %(backoff)s) n;

-- hung: a lambda task with no timer
INSERT INTO sfn_tasks (execution_id, frame_id, attempt, kind, resource, parameters)
SELECT n, 1, 1, 'lambda', 'arn:aws:states:::lambda:invoke', '{"Payload": {"step_id": "step"}}'
  FROM generate_series(%(gated)s + %(backoff)s + 1, %(open)s) n;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--gated", type=int, default=10_000)
    parser.add_argument("--backoff", type=int, default=10_000)
    parser.add_argument("--hung", type=int, default=1_000)
    parser.add_argument("--ended", type=int, default=100_000)
    args = parser.parse_args()
    name = f"switchyard_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(f"{args.server}/{name}", autocommit=True) as conn:
            apply_migrations(conn)
            opened = args.gated + args.backoff + args.hung
            counts = {"gated": args.gated, "backoff": args.backoff, "open": opened}
            params = {**counts, "all": opened + args.ended}
            for statement in FILL_SQL.split(";\n"):
                if statement.strip():
                    conn.execute(statement.encode(), params)
            conn.execute("ANALYZE")
            times = []
            for _ in range(5):
                started = time.perf_counter()
                found = stuck_runs(conn, after_seconds=300)
                times.append((time.perf_counter() - started) * 1000)
        print(
            f"open runs {opened:,} (gated {args.gated:,}, in a backoff {args.backoff:,},"
            f" hung {args.hung:,}), ended {args.ended:,}"
        )
        print(
            f"stuck_runs: found {len(found):,} stuck; median {statistics.median(times):.0f} ms,"
            f" worst {max(times):.0f} ms (5 calls)"
        )
    finally:
        with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


if __name__ == "__main__":
    main()
