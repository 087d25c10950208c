"""approval_notify's work: the gate a person sees, recorded in the run database."""

from __future__ import annotations

import uuid
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.contract import GateKind, GateRequest, RunContext, StepContext, WorkflowInfo
from switchyard.gates import GateStore, open_gate


def approval(
    gate: dict[str, Any], *, inputs: dict[str, Any], steps: dict[str, Any] | None = None
) -> GateRequest:
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    return GateRequest(
        kind=GateKind.APPROVAL,
        step_id="approve",
        workflow=WorkflowInfo(name="support", version=1),
        context=StepContext(
            inputs=inputs,
            run=RunContext(
                id=run_id, workflow="support", version=1, started_at="2026-01-01T00:00:00Z"
            ),
            steps=steps or {},
        ),
        task_token=f"token-{uuid.uuid4().hex}",
        execution_arn=f"arn:aws:states:us-east-1:000000000000:execution:support:{run_id}",
        gate={"type": "human_gate", "assignee": "lead", **gate},
        assignee="lead",
        timeout_seconds=3600,
    )


def test_a_message_of_one_object_expression_reads_as_json(pg_pool: ConnectionPool) -> None:
    request = approval({"message": "{{ inputs.order }}"}, inputs={"order": {"id": "é", "ok": True}})
    gate = open_gate(request, GateStore(pg_pool))
    assert gate.message == '{"id": "é", "ok": true}'
    (stored,) = GateStore(pg_pool).open_for(request.context.run.id)
    assert stored.message == '{"id": "é", "ok": true}'
