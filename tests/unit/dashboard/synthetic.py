"""Run records written straight into the tables, as the engine writes them, for what a real run
would take minutes to produce: a run of 1,000 steps, 100,000 runs of history (the benchmark)."""

from __future__ import annotations

import json
from typing import Any

import psycopg

WIDE_CHAINS = 10
WIDE_LENGTH = 100


def wide_definition(run_name: str) -> tuple[str, list[str]]:
    """A state machine of `WIDE_CHAINS` chains of `WIDE_LENGTH` tool steps, as the compiler
    marks steps (a Task whose payload has `step_id` and the step's `after`)."""
    states: dict[str, Any] = {}
    for chain in range(WIDE_CHAINS):
        for i in range(WIDE_LENGTH):
            step = f"c{chain}_s{i}"
            after = [f"c{chain}_s{i - 1}"] if i else []
            states[step] = {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"Payload": {"step_id": step, "step": {
                    "type": "tool", "tool": "http.request", "after": after}}},
                "End": True,
            }  # fmt: skip
    return json.dumps({"Comment": run_name, "StartAt": "c0_s0", "States": states}), list(states)


def insert_wide_run(conninfo: str, machine_arn: str, run_id: str) -> list[str]:
    """A finished run of 1,000 completed steps; the step ids."""
    definition, steps = wide_definition(run_id)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sfn_definitions (hash, definition) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (f"wide-{run_id}", definition),
        )
        (execution,) = conn.execute(
            "INSERT INTO sfn_executions (arn, machine_arn, definition_hash, name, status,"
            " started_at) VALUES (%s, %s, %s, %s, 'SUCCEEDED', now()) RETURNING id",
            (f"{machine_arn}:{run_id}", machine_arn, f"wide-{run_id}", run_id),
        ).fetchone()  # type: ignore[misc]
        conn.execute(
            "INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version,"
            " status, started_at, ended_at) VALUES (%s, %s, 'wide', 1, 'succeeded', now(), now())",
            (execution, run_id),
        )
        conn.execute(
            "INSERT INTO task_runs (execution_id, step_id, status, attempts, output, cost_usd,"
            " started_at, ended_at) SELECT %s, s, 'completed', 1, '{\"status\": 200}', 0.0001,"
            " now(), now() FROM unnest(%s::text[]) s",
            (execution, steps),
        )
    return steps


def insert_child_run(conninfo: str, parent_run_id: str, step: str, child_run_id: str) -> None:
    """A finished sub-workflow run started by `step` of the parent run (same machine)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sfn_executions (arn, machine_arn, definition_hash, name, status,"
            " started_at) SELECT e.machine_arn || ':' || %(child)s, e.machine_arn,"
            " e.definition_hash, %(child)s, 'SUCCEEDED', now()"
            " FROM sfn_executions e JOIN workflow_runs r ON r.execution_id = e.id"
            " WHERE r.run_id = %(parent)s",
            {"child": child_run_id, "parent": parent_run_id},
        )
        conn.execute(
            "INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version, status,"
            " started_at, ended_at, parent_execution_id, parent_step)"
            " SELECT c.id, c.name, r.workflow, r.workflow_version, 'succeeded', now(), now(),"
            " r.execution_id, %(step)s FROM sfn_executions c, workflow_runs r"
            " WHERE c.name = %(child)s AND r.run_id = %(parent)s",
            {"child": child_run_id, "parent": parent_run_id, "step": step},
        )
