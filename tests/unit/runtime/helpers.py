"""Builders of step invocations as a compiled machine sends them."""

from __future__ import annotations

import uuid
from typing import Any

from switchyard.contract import RunContext, StepContext, StepInvocation, WorkflowInfo


def invocation(
    step_id: str,
    step: dict[str, Any],
    *,
    run_id: str | None = None,
    inputs: dict[str, Any] | None = None,
    steps: dict[str, Any] | None = None,
    scope: dict[str, Any] | None = None,
    retry_count: int | None = None,
    budget: dict[str, Any] | None = None,
    tenant: str = "default",
    started_at: str = "2026-01-01T00:00:00Z",
) -> StepInvocation:
    run = RunContext(
        id=run_id or f"run-{uuid.uuid4().hex[:10]}",
        workflow="support",
        version=1,
        started_at=started_at,
        tenant=tenant,
    )
    return StepInvocation(
        step_id=step_id,
        step=step,
        workflow=WorkflowInfo(name="support", version=1, tenant=tenant, budget=budget),
        context=StepContext(inputs=inputs or {}, run=run, steps=steps or {}, scope=scope),
        retry_count=retry_count,
    )


def retried(inv: StepInvocation, retry_count: int) -> StepInvocation:
    """The same invocation, as Step Functions sends it on a retry."""
    return inv.model_copy(update={"retry_count": retry_count})
