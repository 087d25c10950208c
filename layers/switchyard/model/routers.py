"""Routers choose which of the steps after them run; the others are skipped."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from switchyard.model.base import ConditionText, Spec, StepId, Template
from switchyard.model.budget import StepBudget
from switchyard.model.durations import Duration
from switchyard.model.retry import RetryPolicy
from switchyard.model.steps import DagKeys, Provider


class RuleRoute(Spec):
    when: ConditionText
    to: StepId


class Threshold(Spec):
    min: float
    to: StepId


class LlmRoute(Spec):
    to: StepId
    description: str
    """What belongs on this route; shown to the model."""


class RouterBase(DagKeys):
    type: Literal["router"]
    default: StepId | None = None
    """Taken when nothing else matches; without one, every target is skipped."""


class RuleRouter(RouterBase):
    """The first route whose condition holds."""

    strategy: Literal["rule"]
    routes: list[RuleRoute] = Field(min_length=1)


class ScoreRouter(RouterBase):
    """The first threshold (highest `min` first) that the score reaches."""

    strategy: Literal["score"]
    score: ConditionText
    """A path to a number, e.g. steps.classify.output.confidence."""
    thresholds: list[Threshold] = Field(min_length=1)


class LlmRouter(RouterBase):
    """One model call picks a route id; anything else takes the default."""

    strategy: Literal["llm"]
    model: str | None = None
    provider: Provider | None = None
    fallback_models: list[str] = Field(default_factory=list)
    prompt: Template | None = None
    """What to classify; default: the outputs of the steps in `after`."""
    routes: list[LlmRoute] = Field(min_length=1)
    timeout: Duration | None = None
    retry: RetryPolicy | None = None
    budget: StepBudget | None = None


RouterStep = Annotated[RuleRouter | ScoreRouter | LlmRouter, Field(discriminator="strategy")]
