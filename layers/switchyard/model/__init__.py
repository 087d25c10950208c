"""The workflow model: pydantic types for the whole workflow file format."""

from switchyard.model.base import (
    PRIORITIES,
    ErrorType,
    OnError,
    Priority,
    SideEffect,
    Spec,
)
from switchyard.model.budget import StepBudget, WorkflowBudget
from switchyard.model.durations import Duration, format_duration, parse_duration
from switchyard.model.retry import DEFAULT_RETRY_ON, RetryPolicy
from switchyard.model.routers import (
    LlmRoute,
    LlmRouter,
    RuleRoute,
    RuleRouter,
    ScoreRouter,
    Threshold,
)
from switchyard.model.steps import (
    AgentBody,
    AgentContinueAsNew,
    AgentStep,
    ContinueAsNew,
    EscalationTier,
    HumanGateStep,
    InlineStep,
    LoopStep,
    MapStep,
    SubWorkflowBody,
    SubWorkflowStep,
    ToolBody,
    ToolStep,
)
from switchyard.model.tools import ToolDef, ToolPolicy
from switchyard.model.triggers import EventTrigger, QueueTrigger, ScheduleTrigger, WebhookTrigger
from switchyard.model.workflow import FORMAT_VERSION, Defaults, Step, Workflow

AnyRouter = RuleRouter | ScoreRouter | LlmRouter

__all__ = [
    "DEFAULT_RETRY_ON",
    "FORMAT_VERSION",
    "PRIORITIES",
    "AgentBody",
    "AgentContinueAsNew",
    "AgentStep",
    "AnyRouter",
    "ContinueAsNew",
    "Defaults",
    "Duration",
    "ErrorType",
    "EscalationTier",
    "EventTrigger",
    "HumanGateStep",
    "InlineStep",
    "LlmRoute",
    "LlmRouter",
    "LoopStep",
    "MapStep",
    "OnError",
    "Priority",
    "QueueTrigger",
    "RetryPolicy",
    "RuleRoute",
    "RuleRouter",
    "ScheduleTrigger",
    "ScoreRouter",
    "SideEffect",
    "Spec",
    "Step",
    "StepBudget",
    "SubWorkflowBody",
    "SubWorkflowStep",
    "Threshold",
    "ToolBody",
    "ToolDef",
    "ToolPolicy",
    "ToolStep",
    "WebhookTrigger",
    "Workflow",
    "WorkflowBudget",
    "format_duration",
    "parse_duration",
]
