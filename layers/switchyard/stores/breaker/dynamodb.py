"""Circuit breakers on DynamoDB, in the budget ledger's table (key `pk`, TTL `expires_at`).

One item per circuit, `breaker#<circuit>`, holding the state and a `version`. A change reads the
item (a consistent read), computes the next state, and writes it on the condition that the
version is still the one it read; when another process changed it meanwhile, the change is made
again from the newer state. Items expire 30 days after their last change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from switchyard.constants import BUDGET_KEY_ATTRIBUTE, BUDGET_TTL_ATTRIBUTE
from switchyard.stores.breaker.breakers import (
    DEFAULT_POLICY,
    BreakerPolicy,
    BreakerState,
    BreakerStore,
)

_PK = BUDGET_KEY_ATTRIBUTE
_TTL = BUDGET_TTL_ATTRIBUTE
RETENTION_SECONDS = 30 * 86400
MAX_CONFLICTS = 50
"""Changes lost to a concurrent change before giving up (each is one round trip)."""
_NUMBERS = ("window", "calls", "failures", "opened", "version")
_TIMES = ("open_until", "probe_until")


def _key(circuit: str) -> dict[str, Any]:
    return {_PK: {"S": f"breaker#{circuit}"}}


def _state(item: dict[str, Any] | None) -> BreakerState:
    if not item:
        return BreakerState()
    values: dict[str, Any] = {"state": item["state"]["S"]}
    values.update({name: int(item[name]["N"]) for name in _NUMBERS})
    values.update({name: float(item[name]["N"]) for name in _TIMES})
    return BreakerState(**values)


class DynamoDBBreakerStore(BreakerStore):
    def __init__(
        self,
        table_name: str,
        *,
        client: Any = None,
        policy: BreakerPolicy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(policy=policy, clock=clock)
        if client is None:
            import boto3  # type: ignore[import-untyped]

            client = boto3.client("dynamodb")
        self.table = table_name
        self._client = client

    def _read(self, circuit: str) -> BreakerState:
        response = self._client.get_item(
            TableName=self.table, Key=_key(circuit), ConsistentRead=True
        )
        return _state(response.get("Item"))

    def _change(
        self, circuit: str, change: Callable[[BreakerState], BreakerState | None]
    ) -> tuple[BreakerState, BreakerState]:
        for _ in range(MAX_CONFLICTS):
            before = self._read(circuit)
            after = change(before)
            if after is None:
                return before, before
            after = replace(after, version=before.version + 1)
            item: dict[str, Any] = {**_key(circuit), "state": {"S": after.state}}
            item.update({name: {"N": str(getattr(after, name))} for name in (*_NUMBERS, *_TIMES)})
            item[_TTL] = {"N": str(int(self._clock()) + RETENTION_SECONDS)}
            try:
                self._client.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#pk) OR version = :version",
                    ExpressionAttributeNames={"#pk": _PK},
                    ExpressionAttributeValues={":version": {"N": str(before.version)}},
                )
            except self._client.exceptions.ConditionalCheckFailedException:
                continue  # changed meanwhile: compute again from the newer state
            return before, after
        raise RuntimeError(f"circuit {circuit}: {MAX_CONFLICTS} concurrent changes in a row")
