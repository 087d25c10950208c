"""Budgets: limits on cost, tokens, steps and time, enforced before each step is dispatched."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from switchyard.model.base import Spec
from switchyard.model.durations import Duration


class StepBudget(Spec):
    """Limits for one step."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)


class WorkflowBudget(Spec):
    """Limits for a whole run, sub-workflows included."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_duration: Duration | None = None
    """Wall clock from the start of the run; the state machine's execution timeout."""
    max_steps: int | None = Field(default=None, gt=0)
    """Step attempts, retries included."""
    max_tokens: int | None = Field(default=None, gt=0)
    on_exceeded: Literal["pause", "fail"] = "pause"
