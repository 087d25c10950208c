"""The step runtime: what agent, tool and router steps do when a state machine calls them.

Entry points (the `functions/*` handlers call these):

    run_agent_step(invocation, services, deadline=..., lambda_context=...) -> StepResult
    run_tool_step(invocation, services, deadline=..., lambda_context=...)  -> StepResult
    run_llm_router(invocation, services, deadline=..., lambda_context=...) -> StepResult

They raise `StepError`s whose `name` is the Lambda `errorType` the compiled machine matches.
`StepServices` holds the stores and clients (in memory by default; `postgres_services` and
`aws_services` wire the real backends).

Its errors live in `switchyard.contract.step_errors`, which the stores import as well.
"""

from __future__ import annotations

from switchyard.contract.step_errors import (
    BudgetExceededError,
    HumanRequiredError,
    InvalidOutputError,
    PermanentError,
    PolicyViolationError,
    RateLimitedError,
    RejectedError,
    StepError,
    StepTimeoutError,
    TemplateRenderError,
    TransientError,
)
from switchyard.runtime.agent import run_agent_step
from switchyard.runtime.clock import Deadline, ManualClock, SystemClock
from switchyard.runtime.router import run_llm_router
from switchyard.runtime.services import StepServices, aws_services, postgres_services
from switchyard.runtime.tool_step import run_tool_step

__all__ = [
    "BudgetExceededError",
    "Deadline",
    "HumanRequiredError",
    "InvalidOutputError",
    "ManualClock",
    "PermanentError",
    "PolicyViolationError",
    "RateLimitedError",
    "RejectedError",
    "StepError",
    "StepServices",
    "StepTimeoutError",
    "SystemClock",
    "TemplateRenderError",
    "TransientError",
    "aws_services",
    "postgres_services",
    "run_agent_step",
    "run_llm_router",
    "run_tool_step",
]
