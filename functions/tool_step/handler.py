"""tool_step: one tool call through the tool gateway (policy, idempotency, audit). Over
`switchyard.runtime.run_tool_step`; errors leave as the contract's error names."""

from __future__ import annotations

from switchyard.runtime import run_tool_step
from switchyard.runtime.lambda_adapter import step_handler

handler = step_handler(
    "tool_step",
    lambda invocation, services, context: run_tool_step(
        invocation, services, lambda_context=context
    ),
)
