"""What compiling one step needs to know, and the pieces every kind of step shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from switchyard.compile.context import context_parameters, referenced_steps, templates_of
from switchyard.compile.fragments import Block, Exit, State
from switchyard.contract import FunctionName, function_placeholder
from switchyard.model import (
    AgentBody,
    LlmRouter,
    RetryPolicy,
    Step,
    SubWorkflowBody,
    ToolBody,
    Workflow,
)

LOOP_RESULT = "$.scope.result"
"""Where a loop's iteration writes its result."""
ITEM_RESULT = "$.result"
"""Where a map item writes its result (the item's output is its `output`)."""
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
LAMBDA_CALLBACK = "arn:aws:states:::lambda:invoke.waitForTaskToken"
START_CHILD_SYNC = "arn:aws:states:::states:startExecution.sync:2"
SQS_SEND = "arn:aws:states:::sqs:sendMessage"
LAMBDA_SERVICE_RETRY: dict[str, Any] = {
    "ErrorEquals": [
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException",
    ],
    "IntervalSeconds": 1,
    "MaxAttempts": 3,
    "BackoffRate": 2.0,
    "JitterStrategy": "FULL",
}
"""For the platform's own functions (run_start, render): the Lambda service's hiccups."""


@dataclass
class Unit:
    """One step being compiled, and where its states go."""

    workflow: Workflow
    step_id: str
    block: Block
    scope: bool = False
    """The state has a `scope` (inside a map item or a loop)."""
    record_path: str = ""
    """Where the step's record is written; default `$.steps.<id>`."""
    extra_steps: set[str] = field(default_factory=set)
    """Steps the payload must carry besides those the templates read (e.g. `after`)."""
    output_limit: int | None = None
    """The most bytes the step's output (a map's: each item's) may keep in the state, when the
    256 KB must be shared more finely than `LARGE_OUTPUT_BYTES` each (validate/payload_size)."""

    def __post_init__(self) -> None:
        if not self.record_path:
            self.record_path = f"$.steps.{self.step_id}"

    @property
    def step_record(self) -> str:
        """The record of the DAG step (a loop's iterations write elsewhere until it ends)."""
        return f"$.steps.{self.step_id}"

    @property
    def step(self) -> Step:
        return self.workflow.steps[self.step_id]

    def completed(self, state: State) -> Exit:
        """The exit by which the step leaves `state` completed (known only where the state
        writes the step's own record, not a loop's iteration or a map's item)."""
        if self.record_path != self.step_record:
            return Exit(state)
        return Exit(state, step=self.step_id, status="completed")

    def name(self, role: str = "") -> str:
        return f"{self.step_id}:{role}" if role else self.step_id

    def workflow_info(self, *, budget: bool = True) -> dict[str, Any]:
        info: dict[str, Any] = {
            "name": self.workflow.name,
            "version": self.workflow.version,
            "tenant": self.workflow.tenant,
        }
        if budget and self.workflow.budget is not None:
            info["budget"] = self.workflow.budget.model_dump(mode="json", exclude_none=True)
        if self.workflow.priority != "normal":
            info["priority"] = self.workflow.priority
        return info

    def context(self, body: Step | AgentBody | ToolBody | SubWorkflowBody) -> dict[str, Any]:
        steps = referenced_steps(templates_of(body)) | self.extra_steps
        if not self.scope:
            steps |= set(getattr(body, "after", []) or [])
        return context_parameters(steps, scope=self.scope)

    def retry_policy(self, body: Step | AgentBody | ToolBody | SubWorkflowBody) -> RetryPolicy:
        policy = getattr(body, "retry", None)
        if isinstance(policy, RetryPolicy):
            return policy
        return self.workflow.defaults.retry or RetryPolicy()

    def timeout(self, body: Step | AgentBody | ToolBody | SubWorkflowBody) -> int | None:
        value = getattr(body, "timeout", None)
        if isinstance(value, int) and value > 0:
            return value
        default = self.workflow.defaults.timeout
        return default if default else None


def step_config(
    workflow: Workflow,
    body: AgentBody | ToolBody | SubWorkflowBody | Step,
    *,
    parent_input: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The step as the runtime reads it: as written, with defaults applied, declared tools
    attached, and for a map's or loop's step the parent's `input` beneath its own."""
    config: dict[str, Any] = body.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    config["type"] = body.type
    if parent_input:
        config["input"] = {**parent_input, **config.get("input", {})}
    # `after` and `merge` stay: the runtime builds `joined` from them.
    for key in ("when", "fallback", "on_error", "step"):
        config.pop(key, None)
    defaults = workflow.defaults
    if isinstance(body, AgentBody):
        config.setdefault("model", defaults.model)
        if defaults.provider:
            config.setdefault("provider", defaults.provider)
        if body.tools:
            config["tool_defs"] = {
                name: workflow.tools[name].model_dump(mode="json", exclude_none=True)
                for name in body.tools
            }
    elif isinstance(body, LlmRouter):
        config.setdefault("model", defaults.model)
        if defaults.provider:
            config.setdefault("provider", defaults.provider)
    elif isinstance(body, ToolBody) and body.tool in workflow.tools:
        config["tool_defs"] = {
            body.tool: workflow.tools[body.tool].model_dump(mode="json", exclude_none=True)
        }
    if "model" in config and config["model"] is None:
        config.pop("model")
    policy = getattr(body, "retry", None) or defaults.retry
    if policy is not None:
        config["retry"] = policy.model_dump(mode="json")
    return config


def function(name: FunctionName) -> str:
    return function_placeholder(name)
