"""Everything a step needs from outside, in one object the handlers build once per process.

Each field has a default that works on one machine without configuration (in-memory stores);
handlers for AWS and the local engine pass the DynamoDB/S3 or PostgreSQL backends.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from switchyard.runtime.clock import SYSTEM_CLOCK, Clock
from switchyard.runtime.journal import InMemoryTurnJournal, TurnJournal
from switchyard.runtime.large_outputs import OutputStore
from switchyard.runtime.models_catalog import ModelCatalog, default_catalog, to_micros
from switchyard.runtime.providers import ModelProvider, provider_from_env
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.runtime.tools import GatewayStores, ToolEnvironment
from switchyard.stores.budget import BudgetLedger

TENANT_DAILY_LIMITS_ENV = "SWITCHYARD_TENANT_DAILY_LIMITS"
"""JSON `{"tenant": usd}`: each tenant's daily spend limit."""


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

    def provider_for(self, name: str | None) -> ModelProvider:
        return self.provider if self.provider is not None else provider_from_env(name)
