"""The LLM router: one model call picks a route id; anything else takes the default.

The model sees the routes (id and description) and the thing to classify (the router's `prompt`,
else the outputs of its `after` steps) and answers `{"route": ..., "reason": ...}`. An answer that
is not JSON, or names no route, is not an error: the router takes its `default` (null when it has
none, so every target is skipped) and records why. Output: `{route, reason}`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from switchyard.contract import StepInvocation, StepResult
from switchyard.contract.step_errors import InvalidOutputError, PermanentError, StepError
from switchyard.model import LlmRouter
from switchyard.runtime.agent import UsageTotal, parse_json_answer
from switchyard.runtime.budgets import BudgetGuard
from switchyard.runtime.clock import Deadline
from switchyard.runtime.providers import CallKey, ModelRequest, call_model
from switchyard.runtime.providers.base import input_tokens
from switchyard.runtime.rendering import render_text
from switchyard.runtime.services import StepServices
from switchyard.runtime.step_io import context_for, deadline_for, finish, run_script, step_fields

ROUTER_MAX_TOKENS = 512


def router_system(router: LlmRouter) -> str:
    routes = "\n".join(f"- {route.to}: {route.description}" for route in router.routes)
    return (
        "You are a router. Choose the one route that fits the input best.\n"
        f"Routes:\n{routes}\n\n"
        'Answer with only a JSON object: {"route": "<route id>", "reason": "<one sentence>"}.'
    )


def run_llm_router(
    invocation: StepInvocation,
    services: StepServices,
    *,
    deadline: Deadline | None = None,
    lambda_context: Any = None,
) -> StepResult:
    """Run one attempt of an LLM router step; raises a `StepError` on failure."""
    router = LlmRouter.model_validate(step_fields(invocation))
    if router.model is None:
        raise PermanentError(f"router {invocation.step_id} has no model (set defaults.model)")
    attempt_deadline = deadline_for(invocation, services, deadline, lambda_context)
    context = context_for(invocation, services)
    if router.prompt is not None:
        subject = render_text(router.prompt, context)
    else:
        subject = json.dumps(default_subject(invocation, context), ensure_ascii=False, default=str)
    guard = BudgetGuard(
        invocation,
        services.ledger,
        services.catalog,
        services.clock,
        step_budget=router.budget,
        tenant_daily_limit=services.tenant_daily_limits.get(invocation.workflow.tenant),
    )
    guard.check_priced([router.model, *router.fallback_models])
    guard.start_attempt()
    scope = invocation.context.scope or {}
    request = ModelRequest(
        model=router.model,
        messages=[{"role": "user", "content": subject}],
        max_tokens=ROUTER_MAX_TOKENS,
        system=router_system(router),
        key=CallKey(
            invocation.context.run.id,
            invocation.step_id,
            scope.get("index"),
            scope.get("iteration"),
            invocation.attempt,
        ),
    )
    cap = guard.cap(
        [router.model, *router.fallback_models], input_tokens(request), ROUTER_MAX_TOKENS
    )
    request = replace(request, max_tokens=cap.max_tokens)
    reservation = guard.reserve(router.model, 0, cap.reserve_micros)
    try:
        response = call_model(
            services.provider_for(router.provider, script=run_script(invocation)),
            request,
            fallback_models=router.fallback_models,
            gate=services.gate,
            deadline=attempt_deadline,
            quota=services.quota_guard(invocation),
        )
    except BaseException:
        guard.release(reservation)
        raise
    total = UsageTotal()
    total.add(response.usage, guard.settle(reservation, response.usage))
    try:
        output = decide(
            router, response.structured if response.structured is not None else response.text
        )
        return finish(invocation, services, output, cost=total.cost, usage=total.usage())
    except StepError as error:  # the call was paid for: the failure reports it
        error.spent = total.spend()
        raise


def default_subject(invocation: StepInvocation, context: dict[str, Any]) -> dict[str, Any]:
    """The outputs of the router's `after` steps (when the step carries `after`), else of the
    completed steps in its context, which for a router without a prompt are its `after` steps."""
    if "joined" in context:
        joined: dict[str, Any] = context["joined"]
        return joined
    return {
        step_id: record.get("output")
        for step_id, record in invocation.context.steps.items()
        if isinstance(record, dict) and record.get("status") == "completed"
    }


def decide(router: LlmRouter, answer: Any) -> dict[str, Any]:
    """`{route, reason}` from the model's answer (parsed data, or text holding JSON)."""
    routes = {route.to for route in router.routes}
    if isinstance(answer, str):
        try:
            answer = parse_json_answer(answer)
        except InvalidOutputError:
            bare = answer.strip().strip('"')
            answer = {"route": bare, "reason": ""} if bare in routes else None
    if not isinstance(answer, dict):
        return {"route": router.default, "reason": "the model's answer was not understood"}
    route, reason = answer.get("route"), str(answer.get("reason") or "")
    if route in routes:
        return {"route": route, "reason": reason}
    return {
        "route": router.default,
        "reason": f"the model answered {route!r}, which is not a route; took the default"
        + (f" ({reason})" if reason else ""),
    }
