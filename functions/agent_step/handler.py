"""agent_step: an LLM call, or a model ↔ tool loop. A thin adapter over
`switchyard.runtime.run_agent_step`; errors leave as the contract's error names."""

from __future__ import annotations

from switchyard.runtime import run_agent_step
from switchyard.runtime.lambda_adapter import step_handler

handler = step_handler(
    "agent_step",
    lambda invocation, services, context: run_agent_step(
        invocation, services, lambda_context=context
    ),
)
