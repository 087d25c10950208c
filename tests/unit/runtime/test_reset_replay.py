"""A run started by a reset (`RunContext.reset`): a step before the reset's step takes the reset
run's idempotency namespace and its `run.id`, so its tool's recorded result comes back without
the tool running again, on DynamoDB (moto) as on PostgreSQL; the reset's step runs afresh; and
budgets count the new run's own keys."""

from __future__ import annotations

import uuid
from typing import Any

from switchyard.contract import ResetFrom, StepInvocation
from switchyard.runtime import StepServices, run_tool_step
from tests.unit.runtime.helpers import invocation
from tests.unit.runtime.test_tool_step import persistence, services

__all__ = ["persistence", "services"]

CHARGED: list[dict[str, Any]] = []


def charge(customer: str, reference: str) -> dict[str, Any]:
    CHARGED.append({"customer": customer, "reference": reference})
    return {"charge": f"CH-{len(CHARGED)}", "reference": reference}


def charge_step() -> dict[str, Any]:
    return {
        "type": "tool",
        "tool": "charge",
        "args": {"customer": "{{ inputs.customer }}", "reference": "{{ run.id }}"},
        "tool_defs": {
            "charge": {
                "description": "Charge a customer.",
                "kind": "python",
                "config": {"function": "tests.unit.runtime.test_reset_replay:charge"},
                "side_effect": "non_idempotent",
            }
        },
    }


def in_reset(inv: StepInvocation, original: str, reuse: dict[str, str]) -> StepInvocation:
    """The same step in a run that resets `original` (a new run id)."""
    run = inv.context.run.model_copy(
        update={
            "id": f"{original}-reset-{uuid.uuid4().hex[:6]}",
            "reset": ResetFrom(run=original, to="notify", reuse=reuse),
        }
    )
    return inv.model_copy(update={"context": inv.context.model_copy(update={"run": run})})


def test_a_step_before_the_reset_step_replays_its_recorded_result(services: StepServices) -> None:
    customer = f"c-{uuid.uuid4().hex[:6]}"
    first = invocation("bill", charge_step(), inputs={"customer": customer})
    original = first.context.run.id
    recorded = run_tool_step(first, services)
    before = len(CHARGED)

    again = in_reset(first, original, {"bill": original})
    assert again.idempotency_key == f"{original}:bill"
    assert again.step_key == f"{again.context.run.id}:bill"
    replayed = run_tool_step(again, services)

    assert len(CHARGED) == before  # not charged again
    assert replayed.output == recorded.output == {"charge": f"CH-{before}", "reference": original}


def test_the_reset_step_and_after_run_afresh_under_the_new_run(services: StepServices) -> None:
    first = invocation("bill", charge_step(), inputs={"customer": "fresh"})
    original = first.context.run.id
    run_tool_step(first, services)
    before = len(CHARGED)

    again = in_reset(first, original, {"quote": original})  # bill is not reused
    assert again.idempotency_key == again.step_key
    result = run_tool_step(again, services)

    assert len(CHARGED) == before + 1
    assert result.output["reference"] == again.context.run.id
