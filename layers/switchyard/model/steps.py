"""Step types: agent, tool, human_gate, sub_workflow, map, loop (routers in routers.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from switchyard.model.base import (
    WORKFLOW_REF_PATTERN,
    ConditionText,
    OnError,
    SideEffect,
    Spec,
    StepId,
    Template,
)
from switchyard.model.budget import StepBudget, WorkflowBudget
from switchyard.model.durations import Duration
from switchyard.model.retry import RetryPolicy

Channel = Literal["email", "slack", "console"]
DEFAULT_CHANNELS: tuple[Channel, ...] = ("console",)
MergeStrategy = Literal["by_step", "deep_merge", "list", "first"]
Provider = Literal["anthropic", "bedrock"]


class StepCommon(Spec):
    """Keys every step has, inline or not."""

    output_schema: dict[str, Any] | None = None
    """JSON Schema the step's output must satisfy (else error type invalid_output)."""
    timeout: Duration | None = None
    """Wall-clock limit of one attempt."""
    retry: RetryPolicy | None = None
    budget: StepBudget | None = None
    input: dict[str, Template] = Field(default_factory=dict)
    """What the step receives as `input`, as templates."""


class DagKeys(Spec):
    """Keys of a step that sits in the workflow's DAG."""

    after: list[StepId] = Field(default_factory=list)
    """Steps this one depends on; empty makes it an entry step."""
    when: ConditionText | None = None
    """Condition evaluated when the dependencies are done; false skips the step."""
    merge: MergeStrategy = "by_step"
    """How the outputs of two or more `after` steps are joined into `joined`."""
    fallback: StepId | None = None
    """Step run when this one fails for good; its output stands in for this step's."""
    on_error: OnError | None = None
    """Overrides the workflow's on_error for this step."""


MAX_AGENT_TURNS = 50
"""An agent's `max_turns` without `continue_as_new` (all in one step function call)."""
MAX_CONTINUED_TURNS = 10_000
"""An agent's `max_turns` with `continue_as_new` (spread over segments)."""


class AgentContinueAsNew(Spec):
    """Every `after` model turns without an answer, the agent has the model summarise its work
    and the run goes on in a new execution (a new segment), where the agent starts a fresh
    conversation from its prompt and that summary."""

    after: int = Field(ge=1, le=MAX_AGENT_TURNS)
    """Model turns per segment (the summary is one more)."""
    summary: Template | None = None
    """What the agent asks the model for at the end of a segment; default: to summarise the
    work so far and what remains, for itself to continue from."""


class AgentBody(StepCommon):
    type: Literal["agent"]
    model: str | None = None
    """Model id, e.g. claude-sonnet-4-5; default from `defaults.model`."""
    provider: Provider | None = None
    fallback_models: list[str] = Field(default_factory=list)
    system: Template | None = None
    prompt: Template
    tools: list[str] = Field(default_factory=list)
    """Names from the workflow's `tools` that the model may call."""
    max_turns: int = Field(default=8, ge=1, le=MAX_CONTINUED_TURNS)
    """Model calls in all (at most 50, or 10,000 with `continue_as_new`)."""
    continue_as_new: AgentContinueAsNew | None = None
    """Go on in a new execution every `after` turns, carrying a summary (top-level steps only)."""
    max_tokens: int | None = Field(default=None, ge=1, le=128000)
    temperature: float | None = Field(default=None, ge=0, le=1)


class ToolBody(StepCommon):
    type: Literal["tool"]
    tool: str
    """A built-in tool (http.request, email.send, ...) or a name from `tools`."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments, as templates."""
    side_effect: SideEffect | None = None


class SubWorkflowBody(StepCommon):
    type: Literal["sub_workflow"]
    workflow: Annotated[str, Field(pattern=WORKFLOW_REF_PATTERN)]
    """`name@version`, or `name` for the newest version."""
    budget: WorkflowBudget | None = None  # type: ignore[assignment]

    @property
    def workflow_name(self) -> str:
        return self.workflow.split("@", 1)[0]

    @property
    def workflow_version(self) -> int | None:
        _, _, version = self.workflow.partition("@")
        return int(version) if version else None


class AgentStep(AgentBody, DagKeys):
    """An LLM call, or a model ↔ tool loop when `tools` is set."""


class ToolStep(ToolBody, DagKeys):
    """One call of a built-in or declared tool."""


class SubWorkflowStep(SubWorkflowBody, DagKeys):
    """A run of another workflow, with its own record, budget and retries."""


class EscalationTier(Spec):
    assignee: str
    timeout: Duration | None = None
    """Time this tier has to decide; default: the gate's timeout."""


class HumanGateStep(DagKeys):
    """A person approves or rejects, with the exact data in front of them."""

    type: Literal["human_gate"]
    assignee: str
    """Role that may decide; roles map to people and channels in configuration."""
    channels: list[Channel] = Field(default_factory=lambda: list(DEFAULT_CHANNELS))
    message: Template
    show: dict[str, Template] = Field(default_factory=dict)
    allow_edit: bool = False
    timeout: Duration = 86400
    escalation: list[EscalationTier] = Field(default_factory=list)
    on_timeout: Literal["reject", "approve", "fail"] = "reject"
    budget: StepBudget | None = None
    input: dict[str, Template] = Field(default_factory=dict)


InlineStep = Annotated[AgentBody | ToolBody | SubWorkflowBody, Field(discriminator="type")]
"""The step that a map runs per item or a loop runs per iteration."""


class MapStep(DagKeys):
    """Runs one inline step per item of a list; output: the list of per-item outputs."""

    type: Literal["map"]
    items: Template
    """A template giving a list."""
    max_concurrency: int = Field(default=5, ge=1, le=1000)
    step: InlineStep
    input: dict[str, Template] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    timeout: Duration | None = None
    """Wall-clock limit of the whole map."""
    budget: StepBudget | None = None


MAX_LOOP_ITERATIONS = 100
"""A loop's `max_iterations` without `continue_as_new` (all in one execution)."""
MAX_CONTINUED_ITERATIONS = 1_000_000
"""A loop's `max_iterations` with `continue_as_new` (spread over segments)."""


class ContinueAsNew(Spec):
    """Every `after` iterations the loop goes on in a new execution (a new segment of the same
    run), carrying `summary` as the next iteration's `previous`."""

    after: int = Field(ge=1)
    """Iterations per segment."""
    summary: dict[str, Template] | Template | None = None
    """Templates over what the next iteration sees (`previous`: the last iteration's output,
    `iteration`, `inputs`, `steps`, `run`); default: the last iteration's output as it is."""


class LoopStep(DagKeys):
    """Runs an inline step again until `until` holds, at most `max_iterations` times."""

    type: Literal["loop"]
    step: InlineStep
    until: ConditionText | None = None
    """Condition over `output` (this iteration's) and `iteration` (from 1)."""
    max_iterations: int = Field(ge=1, le=MAX_CONTINUED_ITERATIONS)
    """Hard bound on iterations (at most 100, or 1,000,000 with `continue_as_new`)."""
    continue_as_new: ContinueAsNew | None = None
    """Carry the loop on in a new execution every `after` iterations."""
    input: dict[str, Template] = Field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    timeout: Duration | None = None
    """Wall-clock limit of the whole loop."""
    budget: StepBudget | None = None
