"""Budgets are caps: a request's max_tokens is what the remaining budget can pay for, and a step
that cannot afford a useful answer is refused before its model is called."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import EnclosingBudget, StepInvocation
from switchyard.contract.step_errors import BudgetExceededError
from switchyard.runtime import StepServices, run_agent_step
from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.runtime.providers import ScriptedProvider
from switchyard.runtime.providers.base import CallKey, ModelRequest, ModelResponse
from switchyard.stores.budget import PostgresBudgetLedger, Scope, ScopeLimit
from tests.unit.runtime.helpers import invocation

LONG = "word " * 4000  # 20,000 characters: a model that would talk for ~5,000 tokens


class Recording(ScriptedProvider):
    """The scripted provider, keeping the requests it answered."""

    def __init__(self, script: dict[str, Any]) -> None:
        super().__init__(script)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return super().complete(request)


def agent(**extra: Any) -> dict[str, Any]:
    return {"type": "agent", "model": "claude-sonnet-4-5", "prompt": "Summarise", **extra}


def test_the_issues_example_stays_within_its_step_budget(pg_pool: ConnectionPool) -> None:
    # Before: max_cost_usd 0.001 and max_tokens 50 recorded $0.03 and 2,000 tokens.
    provider = Recording({"draft": [{"text": LONG, "output_tokens": 2000}]})
    ledger = PostgresBudgetLedger(pg_pool)
    services = StepServices(provider=provider, catalog=ModelCatalog(), ledger=ledger)
    step = agent(max_tokens=50, budget={"max_cost_usd": 0.001})
    result = run_agent_step(invocation("draft", step), services)
    assert provider.requests[0].max_tokens <= 50
    assert result.usage is not None and result.usage.output_tokens <= 50
    assert Decimal(str(result.cost_usd)) <= Decimal("0.001")
    assert len(result.output["text"]) <= 50 * 4  # truncated, as a real model's answer is


def test_max_tokens_is_what_the_remaining_run_budget_pays_for(pg_pool: ConnectionPool) -> None:
    provider = Recording({"draft": [{"text": LONG}]})
    ledger = PostgresBudgetLedger(pg_pool)
    services = StepServices(provider=provider, catalog=ModelCatalog(), ledger=ledger)
    inv = invocation("draft", agent(), budget={"max_cost_usd": 0.003})
    result = run_agent_step(inv, services)
    request = provider.requests[0]
    input_micros = result.usage.input_tokens * 3 if result.usage else 0
    # $0.003 = 3,000 micro-dollars; sonnet's output costs 15 per token after the input's 3 each
    assert request.max_tokens == (3000 - input_micros) // 15
    assert result.usage is not None and result.usage.output_tokens == request.max_tokens
    totals = ledger.totals(Scope("run", inv.context.run.id))
    assert totals.spent_micros <= 3000 and totals.reserved_micros == 0


def test_an_enclosing_runs_budget_caps_a_child_runs_request(pg_pool: ConnectionPool) -> None:
    provider = Recording({"draft": [{"text": LONG}]})
    ledger = PostgresBudgetLedger(pg_pool)
    services = StepServices(provider=provider, catalog=ModelCatalog(), ledger=ledger)
    parent = f"parent-{uuid.uuid4().hex[:8]}"
    ledger.reserve(  # a sibling holds all but $0.0015 of the parent's $0.10
        f"sibling-{parent}",
        98_500,
        [ScopeLimit(Scope("run", parent), 100_000, None)],
        owner="sibling",
    )
    inv = invocation("draft", agent())
    run = inv.context.run.model_copy(
        update={"enclosing_budgets": [EnclosingBudget(kind="run", id=parent, max_cost_usd=0.1)]}
    )
    inv = inv.model_copy(update={"context": inv.context.model_copy(update={"run": run})})
    result = run_agent_step(inv, services)
    assert provider.requests[0].max_tokens < 100
    assert Decimal(str(result.cost_usd)) <= Decimal("0.0015")


def test_a_step_that_cannot_afford_a_useful_answer_is_refused_before_dispatch(
    pg_pool: ConnectionPool,
) -> None:
    provider = Recording({"draft": [{"text": "never"}]})
    ledger = PostgresBudgetLedger(pg_pool)
    services = StepServices(provider=provider, catalog=ModelCatalog(), ledger=ledger)
    step = agent(budget={"max_cost_usd": 0.0001})  # 100 micro-dollars: about 6 output tokens
    with pytest.raises(BudgetExceededError) as info:
        run_agent_step(invocation("draft", step), services)
    assert provider.requests == []
    assert "cannot pay for a useful answer" in info.value.message
    assert info.value.scope is not None and info.value.scope.startswith("step:")


def test_a_token_budget_caps_max_tokens_too(pg_pool: ConnectionPool) -> None:
    provider = Recording({"draft": [{"text": LONG}]})
    services = StepServices(
        provider=provider, catalog=ModelCatalog(), ledger=PostgresBudgetLedger(pg_pool)
    )
    result = run_agent_step(invocation("draft", agent(budget={"max_tokens": 300})), services)
    assert result.usage is not None
    assert result.usage.input_tokens + result.usage.output_tokens <= 300


def test_the_scripted_provider_honours_max_tokens_as_a_model_does() -> None:
    provider = ScriptedProvider(
        {"a": [{"text": LONG}], "b": [{"output": {"label": "x" * 400}}], "c": [{"text": "hi"}]}
    )

    def ask(step: str, max_tokens: int) -> ModelResponse:
        key = CallKey(run_id="r", step_id=step, index=None, iteration=None, attempt=1)
        messages = [{"role": "user", "content": "q"}]
        return provider.complete(ModelRequest("claude-sonnet-4-5", messages, max_tokens, key=key))

    cut = ask("a", 10)
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 10
    assert cut.text == LONG[:40]
    structured = ask("b", 20)  # its JSON does not fit: no parsed answer, as from a real model
    assert structured.stop_reason == "max_tokens" and structured.structured is None
    whole = ask("c", 10)
    assert whole.stop_reason == "end_turn" and whole.text == "hi"


def test_an_invocation_without_budgets_keeps_the_steps_max_tokens() -> None:
    provider = Recording({"draft": [{"text": "short"}]})
    services = StepServices(provider=provider, catalog=ModelCatalog())
    step: dict[str, Any] = agent(max_tokens=777)
    run_agent_step(StepInvocation.model_validate(invocation("draft", step).model_dump()), services)
    assert provider.requests[0].max_tokens == 777
