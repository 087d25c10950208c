"""The step runtime: what agent, tool and router steps do when a state machine calls them.

Entry points (the `functions/*` handlers call these):

    run_agent_step(invocation, services, deadline=..., lambda_context=...) -> StepResult
    run_tool_step(invocation, services, deadline=..., lambda_context=...)  -> StepResult
    run_llm_router(invocation, services, deadline=..., lambda_context=...) -> StepResult

They raise `StepError`s whose `name` is the Lambda `errorType` the compiled machine matches.
`StepServices` holds the stores and clients (in memory by default; `postgres_services` and
`aws_services` wire the real backends).

The names below load on first use: the stores import `switchyard.runtime.errors` and
`switchyard.runtime.settings`, and must be able to do so without loading the whole runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from switchyard.runtime.agent import run_agent_step
    from switchyard.runtime.clock import Deadline, ManualClock, SystemClock
    from switchyard.runtime.errors import (
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
    from switchyard.runtime.router import run_llm_router
    from switchyard.runtime.services import StepServices, aws_services, postgres_services
    from switchyard.runtime.tool_step import run_tool_step

_WHERE = {
    "run_agent_step": "agent",
    "run_llm_router": "router",
    "run_tool_step": "tool_step",
    "StepServices": "services",
    "aws_services": "services",
    "postgres_services": "services",
    "Deadline": "clock",
    "ManualClock": "clock",
    "SystemClock": "clock",
    **dict.fromkeys(
        (
            "BudgetExceededError",
            "HumanRequiredError",
            "InvalidOutputError",
            "PermanentError",
            "PolicyViolationError",
            "RateLimitedError",
            "RejectedError",
            "StepError",
            "StepTimeoutError",
            "TemplateRenderError",
            "TransientError",
        ),
        "errors",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'switchyard.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"switchyard.runtime.{_WHERE[name]}"), name)


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
