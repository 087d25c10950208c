"""router_step: an LLM router picks a route (`{route, reason}`); over
`switchyard.runtime.run_llm_router`."""

from __future__ import annotations

from switchyard.runtime import run_llm_router
from switchyard.runtime.lambda_adapter import step_handler

handler = step_handler(
    "router_step",
    lambda invocation, services, context: run_llm_router(
        invocation, services, lambda_context=context
    ),
)
