"""Quotas before dispatch: a model call over its tenant's per-minute quota is not made."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import PermanentError, ThrottledError
from switchyard.runtime import run_agent_step, run_llm_router
from switchyard.runtime.clock import ManualClock
from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.runtime.providers import ModelRequest, ModelResponse, ScriptedProvider
from switchyard.runtime.quotas import (
    ModelQuota,
    QuotaConfigError,
    QuotaGuard,
    parse_tenant_quotas,
    tenant_quotas_from_env,
)
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.runtime.services import StepServices, postgres_services
from switchyard.stores.quota import PostgresQuotaStore
from tests.unit.runtime.helpers import invocation

STEP: dict[str, Any] = {
    "type": "agent",
    "model": "claude-haiku-4-5",
    "prompt": "Summarise {{ inputs.text }}",
    "max_tokens": 200,
}
SCRIPT = {"summarise": [{"text": "short", "input_tokens": 40, "output_tokens": 10}]}


class CountingProvider:
    """The scripted provider, counting the calls that reach it."""

    name = "scripted"

    def __init__(self, script: dict[str, Any]) -> None:
        self._inner = ScriptedProvider(script)
        self.models: list[str] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.models.append(request.model)
        return self._inner.complete(request)


def services_for(
    pool: ConnectionPool, tenant: str, quotas: dict[str, Any], clock: ManualClock
) -> tuple[StepServices, CountingProvider]:
    provider = CountingProvider(SCRIPT)
    services = postgres_services(
        pool,
        provider=provider,
        catalog=ModelCatalog(),
        clock=clock,
        tenant_quotas=parse_tenant_quotas({tenant: quotas}),
        # Retry-Afters other tests left in the shared database are not this test's business.
        gate=RateLimitGate(clock=clock),
    )
    return services, provider


def tenant() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def test_a_call_over_the_requests_quota_is_not_made_and_fails_throttled(
    pg_pool: ConnectionPool,
) -> None:
    clock, name = ManualClock(), tenant()
    # Normal priority fills 80% of a quota: 2 of these 3 requests per minute.
    services, provider = services_for(
        pg_pool, name, {"claude-haiku-4-5": {"requests_per_minute": 3}}, clock
    )
    for _ in range(2):
        run_agent_step(invocation("summarise", STEP, inputs={"text": "a"}, tenant=name), services)
    with pytest.raises(ThrottledError) as info:
        run_agent_step(invocation("summarise", STEP, inputs={"text": "a"}, tenant=name), services)
    assert len(provider.models) == 2  # the third call never reached the model
    error = info.value
    assert error.name is StepErrorName.THROTTLED and error.retryable
    assert error.cause()["quota"] == f"{name}:claude-haiku-4-5:requests"
    assert "2 of 3 per minute used (2 of them open to this call's priority)" in error.message
    clock.advance(120)  # the minute has passed: the step goes through
    run_agent_step(invocation("summarise", STEP, inputs={"text": "a"}, tenant=name), services)
    assert len(provider.models) == 3


def test_tokens_are_taken_at_the_worst_case_and_corrected_to_what_was_used(
    pg_pool: ConnectionPool,
) -> None:
    clock, name = ManualClock(), tenant()
    services, _ = services_for(
        pg_pool, name, {"*": {"tokens_per_minute": 10_000}}, clock
    )  # `*`: every model the tenant's quotas do not name
    run_agent_step(invocation("summarise", STEP, inputs={"text": "a"}, tenant=name), services)
    store = services.quota_store
    assert isinstance(store, PostgresQuotaStore)
    assert store.usage(f"{name}:claude-haiku-4-5:tokens").current == 50  # 40 in, 10 out


def test_a_throttled_model_falls_back_to_a_model_with_room(pg_pool: ConnectionPool) -> None:
    clock, name = ManualClock(), tenant()
    quotas = {
        "claude-haiku-4-5": {"requests_per_minute": 1},  # 1: even a share of it lets one by
        "claude-sonnet-4-5": {"requests_per_minute": 1},
    }
    services, provider = services_for(pg_pool, name, quotas, clock)
    step = {**STEP, "fallback_models": ["claude-sonnet-4-5"]}
    for _ in range(2):
        run_agent_step(invocation("summarise", step, inputs={"text": "a"}, tenant=name), services)
    assert provider.models == ["claude-haiku-4-5", "claude-sonnet-4-5"]
    with pytest.raises(ThrottledError, match=r"fallback models claude-sonnet-4-5 too"):
        run_agent_step(invocation("summarise", step, inputs={"text": "a"}, tenant=name), services)
    assert len(provider.models) == 2


def test_a_router_is_throttled_like_an_agent(pg_pool: ConnectionPool) -> None:
    clock, name = ManualClock(), tenant()
    services, provider = services_for(
        pg_pool, name, {"claude-haiku-4-5": {"requests_per_minute": 1}}, clock
    )
    router = {
        "type": "router",
        "strategy": "llm",
        "model": "claude-haiku-4-5",
        "prompt": "route {{ inputs.text }}",
        "routes": [{"to": "a", "description": "A"}, {"to": "b", "description": "B"}],
        "default": "a",
    }
    run_llm_router(invocation("summarise", router, inputs={"text": "x"}, tenant=name), services)
    with pytest.raises(ThrottledError):
        run_llm_router(invocation("summarise", router, inputs={"text": "x"}, tenant=name), services)
    assert len(provider.models) == 1


def test_a_throttled_call_releases_its_budget_reservation(pg_pool: ConnectionPool) -> None:
    clock, name = ManualClock(), tenant()
    services, _ = services_for(
        pg_pool, name, {"claude-haiku-4-5": {"requests_per_minute": 1}}, clock
    )
    run_agent_step(invocation("summarise", STEP, inputs={"text": "a"}, tenant=name), services)
    second = invocation("summarise", STEP, inputs={"text": "a"}, tenant=name)
    with pytest.raises(ThrottledError):
        run_agent_step(second, services)
    assert services.ledger is not None
    assert services.ledger.open_reservations(second.idempotency_key) == []


def test_lower_priorities_stop_at_their_share_of_a_quota(pg_pool: ConnectionPool) -> None:
    store = PostgresQuotaStore(pg_pool, clock=ManualClock().now)
    name = tenant()
    quotas = {"m": ModelQuota(requests_per_minute=10)}
    low, normal, high = (QuotaGuard(store, quotas, name, p) for p in ("low", "normal", "high"))
    for _ in range(5):
        low.admit("m", 0)
    with pytest.raises(ThrottledError, match="5 of them open to this call's priority"):
        low.admit("m", 0)
    for _ in range(3):
        normal.admit("m", 0)
    with pytest.raises(ThrottledError):
        normal.admit("m", 0)
    high.admit("m", 0)
    high.admit("m", 0)
    with pytest.raises(ThrottledError):
        high.admit("m", 0)


def test_a_call_larger_than_its_share_of_the_quota_fails_for_good(
    pg_pool: ConnectionPool,
) -> None:
    guard = QuotaGuard(
        PostgresQuotaStore(pg_pool), {"m": ModelQuota(tokens_per_minute=1000)}, tenant(), "low"
    )
    with pytest.raises(PermanentError, match=r"can never fit .* \(500 open to it\)"):
        guard.admit("m", 600)


def test_models_without_a_quota_and_services_without_a_store_are_not_limited() -> None:
    assert QuotaGuard(None, {"m": ModelQuota(requests_per_minute=1)}, "t").admit("m", 9) is None
    assert QuotaGuard(None, {}, "t").quota("m") is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('["acme"]', "expected an object of tenants"),
        ('{"acme": 5}', "SWITCHYARD_TENANT_QUOTAS.acme: expected an object of model ids"),
        ('{"acme": {"m": {}}}', "SWITCHYARD_TENANT_QUOTAS.acme.m: expected"),
        ('{"acme": {"m": {"tpm": 5}}}', "unknown key 'tpm'"),
        ('{"acme": {"m": {"requests_per_minute": 0}}}', "a whole number >= 1, got 0"),
        ('{"acme": {"m": {"tokens_per_minute": 1.5}}}', "a whole number >= 1, got 1.5"),
        ("{acme", "SWITCHYARD_TENANT_QUOTAS: not JSON"),
    ],
)
def test_a_bad_quota_configuration_says_where(
    config: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHYARD_TENANT_QUOTAS", config)
    with pytest.raises(QuotaConfigError, match=message.replace(".", r"\.").replace("[", r"\[")):
        tenant_quotas_from_env()


def test_quotas_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "SWITCHYARD_TENANT_QUOTAS",
        '{"acme": {"claude-sonnet-4-5": {"tokens_per_minute": 400000, "requests_per_minute": 50}}}',
    )
    assert StepServices().tenant_quotas == {
        "acme": {"claude-sonnet-4-5": ModelQuota(tokens_per_minute=400_000, requests_per_minute=50)}
    }


def test_a_high_priority_run_gets_the_share_reserved_for_it(pg_pool: ConnectionPool) -> None:
    clock, name = ManualClock(), tenant()
    services, provider = services_for(
        pg_pool, name, {"claude-haiku-4-5": {"requests_per_minute": 5}}, clock
    )

    def step(priority: str | None) -> Any:
        inv = invocation("summarise", STEP, inputs={"text": "a"}, tenant=name)
        run = inv.context.run.model_copy(update={"priority": priority})
        return inv.model_copy(update={"context": inv.context.model_copy(update={"run": run})})

    for _ in range(4):  # normal work fills 80% of the quota
        run_agent_step(step(None), services)
    with pytest.raises(ThrottledError):
        run_agent_step(step("normal"), services)
    run_agent_step(step("high"), services)  # the last 20% waited for it
    assert len(provider.models) == 5
