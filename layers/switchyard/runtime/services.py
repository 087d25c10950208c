"""Everything a step needs from outside, in one object the handlers build once per process.

Each field has a default that works on one machine without configuration (in-memory stores);
handlers for AWS and the local engine pass the DynamoDB/S3 or PostgreSQL backends.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.contract import StepInvocation
from switchyard.runtime.breakers import breaker_policy_from_env
from switchyard.runtime.clock import SYSTEM_CLOCK, Clock
from switchyard.runtime.journal import InMemoryTurnJournal, TurnJournal
from switchyard.runtime.large_outputs import OutputStore
from switchyard.runtime.models_catalog import ModelCatalog, default_catalog, to_micros
from switchyard.runtime.providers import ModelProvider, provider_from_env
from switchyard.runtime.quotas import (
    DEFAULT_PRIORITY,
    QuotaGuard,
    TenantQuotas,
    tenant_quotas_from_env,
)
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.runtime.replay import RecordedResults
from switchyard.runtime.settings import (
    BUDGET_TABLE_ENV,
    IDEMPOTENCY_TABLE_ENV,
    OUTPUT_BUCKET_ENV,
    TENANT_DAILY_LIMITS_ENV,
)
from switchyard.runtime.tools import GatewayStores, ToolEnvironment
from switchyard.stores.budget import BudgetLedger
from switchyard.stores.quota import QuotaStore


def tenant_daily_limits_from_env() -> dict[str, int]:
    raw = os.environ.get(TENANT_DAILY_LIMITS_ENV)
    if not raw:
        return {}
    data = json.loads(raw)
    return {str(tenant): to_micros(str(usd)) for tenant, usd in data.items()}


@dataclass
class StepServices:
    provider: ModelProvider | None = None
    """None: chosen per step from its `provider` and the environment (a script wins)."""
    catalog: ModelCatalog = field(default_factory=default_catalog)
    gate: RateLimitGate = field(default_factory=RateLimitGate)
    tools: GatewayStores = field(default_factory=GatewayStores)
    tool_env: ToolEnvironment = field(default_factory=ToolEnvironment)
    ledger: BudgetLedger | None = None
    """None: budgets are not enforced (costs are still computed and returned)."""
    output_store: OutputStore | None = None
    """None: outputs are returned inline whatever their size."""
    journal: TurnJournal = field(default_factory=InMemoryTurnJournal)
    clock: Clock = SYSTEM_CLOCK
    tenant_daily_limits: dict[str, int] = field(default_factory=tenant_daily_limits_from_env)
    """Tenant -> daily limit in micro-dollars."""
    quota_store: QuotaStore | None = None
    """None: quotas are not enforced."""
    tenant_quotas: TenantQuotas = field(default_factory=tenant_quotas_from_env)
    """Tenant -> model -> tokens and requests per minute (`SWITCHYARD_TENANT_QUOTAS`)."""
    recorded: RecordedResults | None = None
    """The run records a reset run's earlier steps replay (`switchyard.runtime.replay`); None:
    they run again (their side effects still replay through idempotency keys)."""

    def quota_guard(self, invocation: StepInvocation) -> QuotaGuard:
        """The quotas a model call of the step takes its share of: its workflow's tenant's, at
        its run's priority."""
        tenant = invocation.workflow.tenant
        priority = invocation.context.run.priority or DEFAULT_PRIORITY
        return QuotaGuard(self.quota_store, self.tenant_quotas.get(tenant, {}), tenant, priority)

    def provider_for(self, name: str | None, *, script: Any = None) -> ModelProvider:
        """The services' provider, else the run's own script (stored with the run by the local
        engine), else one chosen by name and the environment."""
        if self.provider is not None:
            return self.provider
        if script:
            from switchyard.runtime.providers import ScriptedProvider

            return ScriptedProvider(script)
        return provider_from_env(name)


def postgres_services(pool: ConnectionPool, **overrides: Any) -> StepServices:
    """Every store on one PostgreSQL database (the local engine, or a small deployment)."""
    from switchyard.runtime.journal import PostgresTurnJournal
    from switchyard.runtime.large_outputs import PostgresOutputStore
    from switchyard.runtime.rate_limits import PostgresNotBeforeStore
    from switchyard.runtime.replay import RunRecordResults
    from switchyard.stores.audit import PostgresAuditLog
    from switchyard.stores.breaker import PostgresBreakerStore
    from switchyard.stores.budget import PostgresBudgetLedger
    from switchyard.stores.idempotency import IdempotentCalls, PostgresPersistenceLayer
    from switchyard.stores.quota import PostgresQuotaStore
    from switchyard.stores.tool_calls import PostgresDecisionStore, PostgresToolCallLedger

    clock: Clock = overrides.get("clock", SYSTEM_CLOCK)
    fields: dict[str, Any] = {
        "gate": RateLimitGate(PostgresNotBeforeStore(pool), clock=clock),
        "tools": GatewayStores(
            audit=PostgresAuditLog(pool),
            calls=PostgresToolCallLedger(pool),
            decisions=PostgresDecisionStore(pool),
            idempotency=IdempotentCalls(PostgresPersistenceLayer(pool)),
            breakers=PostgresBreakerStore(pool, policy=breaker_policy_from_env(), clock=clock.now),
        ),
        "ledger": PostgresBudgetLedger(pool),
        "quota_store": PostgresQuotaStore(pool, clock=clock.now),
        "output_store": PostgresOutputStore(pool),
        "journal": PostgresTurnJournal(pool),
        "recorded": RunRecordResults(pool),
    }
    fields.update(overrides)
    return StepServices(**fields)


def aws_services(
    pool: ConnectionPool,
    *,
    idempotency_table: str | None = None,
    budget_table: str | None = None,
    output_bucket: str | None = None,
    dynamodb: Any = None,
    s3: Any = None,
    **overrides: Any,
) -> StepServices:
    """On AWS: idempotency, budgets, quota counters and circuit breakers in DynamoDB (the last
    two in the budget table), large outputs in S3, the rest in Aurora.

    Table and bucket names default to `SWITCHYARD_IDEMPOTENCY_TABLE`, `SWITCHYARD_BUDGET_TABLE`
    and `SWITCHYARD_OUTPUT_BUCKET`.
    """
    from switchyard.runtime.large_outputs import S3OutputStore
    from switchyard.stores.breaker import DynamoDBBreakerStore
    from switchyard.stores.budget import DynamoDBBudgetLedger
    from switchyard.stores.idempotency import IdempotentCalls, dynamodb_persistence_layer
    from switchyard.stores.quota import DynamoDBQuotaStore

    base = postgres_services(pool, **overrides)
    idempotency = idempotency_table or os.environ[IDEMPOTENCY_TABLE_ENV]
    base.tools.idempotency = IdempotentCalls(
        dynamodb_persistence_layer(idempotency, client=dynamodb)
    )
    if "ledger" not in overrides:
        base.ledger = DynamoDBBudgetLedger(
            budget_table or os.environ[BUDGET_TABLE_ENV], client=dynamodb
        )
    if "tools" not in overrides:
        base.tools.breakers = DynamoDBBreakerStore(
            budget_table or os.environ[BUDGET_TABLE_ENV],
            client=dynamodb,
            policy=breaker_policy_from_env(),
            clock=base.clock.now,
        )
    if "quota_store" not in overrides:
        base.quota_store = DynamoDBQuotaStore(
            budget_table or os.environ[BUDGET_TABLE_ENV], client=dynamodb, clock=base.clock.now
        )
    if "output_store" not in overrides:
        base.output_store = S3OutputStore(output_bucket or os.environ[OUTPUT_BUCKET_ENV], client=s3)
    return base
