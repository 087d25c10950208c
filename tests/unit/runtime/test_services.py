"""Services wired for one machine (PostgreSQL) and for AWS (DynamoDB, S3, Aurora)."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract.step_errors import BudgetExceededError
from switchyard.runtime import run_agent_step
from switchyard.runtime.large_outputs import PostgresOutputStore, S3OutputStore
from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.runtime.providers import ScriptedProvider
from switchyard.runtime.quotas import ModelQuota
from switchyard.runtime.services import aws_services, postgres_services
from switchyard.stores.budget import (
    DynamoDBBudgetLedger,
    PostgresBudgetLedger,
    Scope,
    create_budget_table,
)
from switchyard.stores.idempotency import create_idempotency_table
from switchyard.stores.quota import DynamoDBQuotaStore
from tests.unit.runtime.helpers import invocation

STEP: dict[str, Any] = {
    "type": "agent",
    "model": "claude-haiku-4-5",
    "prompt": "Hi {{ inputs.name }}",
    "max_tokens": 16_000,  # the scripted answer is 12,500 tokens: room for all of it
}
SCRIPT = {"greet": [{"text": "x" * 50_000, "input_tokens": 100, "output_tokens": 12_500}]}


def test_postgres_services_store_large_outputs_and_enforce_tenant_days(
    pg_pool: ConnectionPool,
) -> None:
    tenant = f"t{uuid.uuid4().hex[:6]}"
    services = postgres_services(
        pg_pool,
        provider=ScriptedProvider(SCRIPT),
        catalog=ModelCatalog(),
        tenant_daily_limits={tenant: 150_000},
    )
    assert isinstance(services.ledger, PostgresBudgetLedger)
    assert isinstance(services.output_store, PostgresOutputStore)
    first = run_agent_step(
        invocation("greet", STEP, inputs={"name": "Ada"}, tenant=tenant), services
    )
    assert "$switchyard_ref" in first.output["text"]
    # Each call costs $0.0626 and reserves its worst case, $0.08 (100 input tokens at $1 and
    # 16,000 output tokens at $5 per million): the second still fits the tenant's $0.15 day,
    # the third is capped to what is left of it; the fourth cannot pay for a useful answer.
    run_agent_step(invocation("greet", STEP, inputs={"name": "Bo"}, tenant=tenant), services)
    third = run_agent_step(
        invocation("greet", STEP, inputs={"name": "Cy"}, tenant=tenant), services
    )
    assert third.usage is not None and third.usage.output_tokens < 5_000  # capped: $0.0248 left
    with pytest.raises(BudgetExceededError) as info:
        run_agent_step(invocation("greet", STEP, inputs={"name": "Di"}, tenant=tenant), services)
    assert info.value.scope is not None and info.value.scope.startswith(f"tenant_day:{tenant}:")


def test_aws_services_use_dynamodb_and_s3(pg_pool: ConnectionPool) -> None:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        s3 = boto3.client("s3", region_name="us-east-1")
        create_idempotency_table(dynamodb, "idem")
        create_budget_table(dynamodb, "budgets")
        s3.create_bucket(Bucket="outputs")
        services = aws_services(
            pg_pool,
            idempotency_table="idem",
            budget_table="budgets",
            output_bucket="outputs",
            dynamodb=dynamodb,
            s3=s3,
            provider=ScriptedProvider(SCRIPT),
            catalog=ModelCatalog(),
            tenant_quotas={"default": {"*": ModelQuota(tokens_per_minute=100_000)}},
        )
        assert isinstance(services.ledger, DynamoDBBudgetLedger)
        assert isinstance(services.quota_store, DynamoDBQuotaStore)
        assert isinstance(services.output_store, S3OutputStore)
        inv = invocation("greet", STEP, inputs={"name": "Ada"}, budget={"max_cost_usd": 1})
        result = run_agent_step(inv, services)
        assert result.output["text"]["$switchyard_ref"]["store"] == "s3"
        assert services.ledger.totals(Scope("run", inv.context.run.id)).spent_micros == 62_600
        # The quota counters live in the budget table: the call's 12,600 tokens are counted.
        tokens = services.quota_store.usage("default:claude-haiku-4-5:tokens")
        assert tokens.current == 12_600
