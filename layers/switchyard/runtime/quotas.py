"""Quotas as a model call meets them: per tenant and model, tokens and requests per minute.

A provider caps an account's tokens and requests per minute; a tenant that fills them starves
everyone else, and a retry storm against a 429 makes it worse. So every model call first takes
its share of its tenant's quota for the model (`SWITCHYARD_TENANT_QUOTAS`), atomically, from
counters every process shares (`stores/quota`). A call that does not fit is not made: the step
fails `throttled` (transient) and the compiled `Retry` waits it out with backoff and jitter.

What a call takes: one request, and its worst case in tokens (its input, estimated, plus its
`max_tokens`); once it has answered, the tokens are corrected to what it used (input and
output tokens), so an answer shorter than its cap gives the rest back. A call that failed keeps
its request and gives back its tokens.

Priority: a call may fill the last minute only up to its priority's share of the quota
(`PRIORITY_SHARES`), so the top of every quota stays open to more urgent work.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from switchyard.contract.step_errors import PermanentError
from switchyard.runtime.settings import TENANT_QUOTAS_ENV
from switchyard.stores.quota import QuotaGrant, QuotaStore, QuotaTake

PRIORITY_SHARES: dict[str, float] = {"high": 1.0, "normal": 0.8, "low": 0.5}
"""What of a quota each priority may fill: `low` work stops at half of it, `normal` at 80%, so
the last 20% is reserved for `high` and the top half for `normal` and `high`."""
DEFAULT_PRIORITY = "normal"
ANY_MODEL = "*"
"""The quota of every model a tenant's quotas do not name (each model counted on its own)."""
_KINDS = ("tokens_per_minute", "requests_per_minute")


class QuotaConfigError(ValueError):
    """The quotas' configuration does not parse; the message names where and what."""


@dataclass(frozen=True, slots=True)
class ModelQuota:
    tokens_per_minute: int | None = None
    requests_per_minute: int | None = None


TenantQuotas = dict[str, dict[str, ModelQuota]]
"""Tenant -> model id (or `*`) -> its quota."""


def parse_tenant_quotas(data: Any, *, source: str = TENANT_QUOTAS_ENV) -> TenantQuotas:
    """`{"tenant": {"model": {"tokens_per_minute": n, "requests_per_minute": n}}}`, checked."""
    if not isinstance(data, dict):
        raise QuotaConfigError(f"{source}: expected an object of tenants, got {data!r}")
    quotas: TenantQuotas = {}
    for tenant, models in data.items():
        if not isinstance(models, dict):
            raise QuotaConfigError(f"{source}.{tenant}: expected an object of model ids")
        for model, limits in models.items():
            where = f"{source}.{tenant}.{model}"
            if not isinstance(limits, dict) or not limits:
                raise QuotaConfigError(f"{where}: expected {{{', '.join(_KINDS)}}}")
            unknown = sorted(set(limits) - set(_KINDS))
            if unknown:
                raise QuotaConfigError(
                    f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KINDS)})"
                )
            for kind, value in limits.items():
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise QuotaConfigError(
                        f"{where}.{kind}: expected a whole number >= 1, got {value!r}"
                    )
            quotas.setdefault(str(tenant), {})[str(model)] = ModelQuota(**limits)
    return quotas


def tenant_quotas_from_env() -> TenantQuotas:
    raw = os.environ.get(TENANT_QUOTAS_ENV)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise QuotaConfigError(f"{TENANT_QUOTAS_ENV}: not JSON: {exc}") from None
    return parse_tenant_quotas(data)


def share_of(limit: int, priority: str) -> int:
    """What of `limit` a call of `priority` may fill (at least 1, so no quota is shut)."""
    share = PRIORITY_SHARES.get(priority, PRIORITY_SHARES[DEFAULT_PRIORITY])
    return max(1, math.floor(limit * share))


@dataclass(frozen=True, slots=True)
class QuotaGuard:
    """The quotas of one step's tenant, at its priority."""

    store: QuotaStore | None
    quotas: Mapping[str, ModelQuota]
    tenant: str
    priority: str = DEFAULT_PRIORITY

    def quota(self, model: str) -> ModelQuota | None:
        return self.quotas.get(model) or self.quotas.get(ANY_MODEL)

    def admit(self, model: str, tokens: int) -> QuotaGrant | None:
        """Take one request and `tokens` of `model`'s quota; `ThrottledError` when they do not
        fit now, `PermanentError` when they never could (a request larger than the share)."""
        quota = self.quota(model)
        if self.store is None or quota is None:
            return None
        takes: list[QuotaTake] = []
        if quota.tokens_per_minute is not None:
            limit = quota.tokens_per_minute
            admit = share_of(limit, self.priority)
            if tokens > admit:
                raise PermanentError(
                    f"a call of {model} needing up to {tokens} tokens can never fit tenant "
                    f"{self.tenant}'s quota of {limit} tokens per minute at priority "
                    f"{self.priority} ({admit} open to it): lower the step's max_tokens or its "
                    f"input, or raise the quota ({TENANT_QUOTAS_ENV})"
                )
            takes.append(QuotaTake(self.counter(model, "tokens"), tokens, limit, admit))
        if quota.requests_per_minute is not None:
            limit = quota.requests_per_minute
            takes.append(
                QuotaTake(self.counter(model, "requests"), 1, limit, share_of(limit, self.priority))
            )
        return self.store.take(takes) if takes else None

    def settle(self, grant: QuotaGrant | None, tokens: int) -> None:
        """Correct the grant's tokens to what the call used (0 when it failed)."""
        if grant is None or self.store is None:
            return
        for take in grant.takes:
            if take.counter.endswith(":tokens"):
                self.store.adjust(grant, take.counter, tokens - take.amount)

    def counter(self, model: str, kind: str) -> str:
        return f"{self.tenant}:{model}:{kind}"
