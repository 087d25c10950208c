"""The LLM router: one call, a route id or the default."""

from __future__ import annotations

from typing import Any

import pytest

from switchyard.model import LlmRouter
from switchyard.runtime import StepServices, run_llm_router
from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.runtime.providers import ScriptedProvider
from switchyard.runtime.router import decide
from tests.unit.runtime.helpers import invocation
from tests.unit.runtime.providers.fake_api import FakeClaude, ok, text_message, wire_model

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROUTER: dict[str, Any] = {
    "type": "router",
    "strategy": "llm",
    "after": ["classify"],
    "model": "claude-haiku-4-5",
    "routes": [
        {"to": "billing", "description": "payments, invoices, refunds"},
        {"to": "bugfix", "description": "something is broken"},
    ],
    "default": "general",
}
STEPS = {"classify": {"status": "completed", "output": {"summary": "charged twice for invoice 7"}}}


@pytest.mark.parametrize("kind", ["anthropic", "bedrock"])
def test_the_model_picks_a_route_with_a_reason(kind: str) -> None:
    fake = FakeClaude()
    fake.queue(
        wire_model(kind, "claude-haiku-4-5"),
        ok(
            text_message(
                '{"route": "billing", "reason": "mentions an invoice"}',
                input_tokens=300,
                output_tokens=15,
            )
        ),
    )
    services = StepServices(provider=fake.provider(kind), catalog=ModelCatalog())
    result = run_llm_router(invocation("route", ROUTER, steps=STEPS), services)
    assert result.output == {"route": "billing", "reason": "mentions an invoice"}
    assert result.usage is not None and result.usage.input_tokens == 300
    assert result.cost_usd == pytest.approx((300 * 1 + 15 * 5) / 1e6)
    body = fake.requests[0][1]
    assert "billing: payments, invoices, refunds" in body["system"]
    assert "charged twice" in body["messages"][0]["content"]


def test_without_after_in_the_step_the_context_steps_are_the_subject() -> None:
    fake = FakeClaude()
    fake.queue("claude-haiku-4-5", ok(text_message('{"route": "bugfix", "reason": "crash"}')))
    services = StepServices(provider=fake.provider("anthropic"), catalog=ModelCatalog())
    step = {key: value for key, value in ROUTER.items() if key != "after"}  # as compiled
    assert (
        run_llm_router(invocation("route", step, steps=STEPS), services).output["route"] == "bugfix"
    )
    assert "charged twice" in fake.requests[0][1]["messages"][0]["content"]


def test_anything_else_takes_the_default() -> None:
    router = LlmRouter.model_validate(ROUTER)
    assert decide(router, '{"route": "sales", "reason": "?"}')["route"] == "general"
    assert decide(router, "I am not sure")["route"] == "general"
    assert decide(router, "bugfix") == {"route": "bugfix", "reason": ""}


def test_scripted_router() -> None:
    services = StepServices(
        provider=ScriptedProvider({"route": [{"route": "bugfix", "reason": "crash"}]}),
        catalog=ModelCatalog(),
    )
    result = run_llm_router(invocation("route", ROUTER, steps=STEPS), services)
    assert result.output == {"route": "bugfix", "reason": "crash"}
    assert result.usage is not None and result.usage.provider == "scripted"


def test_a_prompt_of_one_object_expression_is_sent_as_json() -> None:
    fake = FakeClaude()
    fake.queue("claude-haiku-4-5", ok(text_message('{"route": "billing", "reason": "invoice"}')))
    services = StepServices(provider=fake.provider("anthropic"), catalog=ModelCatalog())
    step = {**ROUTER, "prompt": "{{ steps.classify.output }}"}
    run_llm_router(invocation("route", step, steps=STEPS), services)
    assert fake.requests[0][1]["messages"][0]["content"] == (
        '{"summary": "charged twice for invoice 7"}'
    )


def test_a_wait_that_would_outlast_the_function_fails_fast_instead() -> None:
    """No `timeout` on the step: its attempt used to have 15 minutes, though its Lambda function
    had seconds left, so a rate limit's wait could outlast the function."""
    from switchyard.contract.step_errors import RateLimitedError
    from switchyard.engine.dispatch.lambda_context import LambdaContext
    from switchyard.runtime.clock import ManualClock
    from switchyard.runtime.rate_limits import RateLimitGate

    fake = FakeClaude()
    fake.queue("claude-haiku-4-5", ok(text_message('{"route": "billing", "reason": "x"}')))
    clock = ManualClock()
    gate = RateLimitGate(clock=clock)
    gate.record("anthropic", "claude-haiku-4-5", 60.0)
    services = StepServices(
        provider=fake.provider("anthropic"), catalog=ModelCatalog(), gate=gate, clock=clock
    )
    context = LambdaContext(
        "router_step", "arn:aws:lambda:::function:router_step", timeout_seconds=30
    )
    with pytest.raises(RateLimitedError, match="past this attempt's deadline"):
        run_llm_router(invocation("route", ROUTER, steps=STEPS), services, lambda_context=context)
    assert clock.sleeps == [] and fake.requests == []

    # With the time to wait, it waits and calls.
    context = LambdaContext(
        "router_step", "arn:aws:lambda:::function:router_step", timeout_seconds=300
    )
    result = run_llm_router(
        invocation("route", ROUTER, steps=STEPS), services, lambda_context=context
    )
    assert result.output["route"] == "billing"
    assert clock.sleeps == [pytest.approx(60.0)]


def test_a_router_model_without_a_price_is_refused_before_it_is_called() -> None:
    from switchyard.contract.step_errors import PermanentError

    fake = FakeClaude()
    fake.queue("gpt-5", ok(text_message('{"route": "billing", "reason": "x"}')))
    services = StepServices(provider=fake.provider("anthropic"), catalog=ModelCatalog())
    with pytest.raises(PermanentError, match="SWITCHYARD_MODEL_PRICES"):
        run_llm_router(invocation("route", {**ROUTER, "model": "gpt-5"}, steps=STEPS), services)
    assert fake.requests == []
