"""The workflow: top-level keys and the map of steps."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from switchyard.model.base import (
    InputName,
    OnError,
    Priority,
    Spec,
    StepId,
    Template,
    ToolName,
    WorkflowName,
)
from switchyard.model.budget import WorkflowBudget
from switchyard.model.durations import Duration
from switchyard.model.retry import RetryPolicy
from switchyard.model.routers import RouterStep
from switchyard.model.steps import (
    AgentStep,
    HumanGateStep,
    LoopStep,
    MapStep,
    Provider,
    SubWorkflowStep,
    ToolStep,
)
from switchyard.model.tools import ToolDef
from switchyard.model.triggers import Trigger

Step = Annotated[
    AgentStep | ToolStep | HumanGateStep | RouterStep | SubWorkflowStep | MapStep | LoopStep,
    Field(discriminator="type"),
]

FORMAT_VERSION = 1


class Defaults(Spec):
    """Applied to every step that does not set them."""

    timeout: Duration | None = None
    retry: RetryPolicy | None = None
    model: str | None = None
    provider: Provider | None = None


class Workflow(Spec):
    """A workflow file (format version 1)."""

    switchyard: Literal[1]
    """Format version."""
    name: WorkflowName
    version: int = Field(ge=1)
    """A changed definition gets a higher version; in-flight runs keep theirs."""
    description: str | None = None
    tenant: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")] = "default"
    inputs: dict[InputName, dict[str, Any]] = Field(default_factory=dict)
    """Input name -> JSON Schema (draft 2020-12); `default` fills missing values."""
    outputs: dict[str, Template] | None = None
    """Output name -> template; default: the outputs of the steps nothing depends on."""
    budget: WorkflowBudget | None = None
    on_error: OnError = OnError.FAIL
    max_parallel: int = Field(default=10, ge=1, le=100)
    priority: Priority = "normal"
    """Of its runs, unless one is started with its own: `high` runs get a reserved share of
    every quota and the local engine's workers first; `low` runs get at most half a quota."""
    defaults: Defaults = Field(default_factory=Defaults)
    tools: dict[ToolName, ToolDef] = Field(default_factory=dict)
    triggers: list[Trigger] = Field(default_factory=list)
    steps: dict[StepId, Step] = Field(min_length=1)

    def dependents(self) -> dict[str, list[str]]:
        """Step id -> the steps that list it in `after`, in file order."""
        out: dict[str, list[str]] = {step_id: [] for step_id in self.steps}
        for step_id, step in self.steps.items():
            for dep in step.after:
                if dep in out:
                    out[dep].append(step_id)
        return out

    def fallback_steps(self) -> set[str]:
        """Steps that run only as another step's fallback."""
        return {step.fallback for step in self.steps.values() if step.fallback is not None}
