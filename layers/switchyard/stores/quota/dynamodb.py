"""Quota counters on DynamoDB, in the budget ledger's table (key `pk`, TTL `expires_at`).

One item per counter and window, `quota#<counter>#<window start>`, holding `used`. A take reads
the previous windows (consistent reads), then counts every counter in one `TransactWriteItems`:
`ADD used :amount` on the condition `used <= :threshold`, the threshold worked out beforehand
(DynamoDB conditions cannot add). A cancelled transaction took nothing. Items expire an hour
after their window: the TTL only keeps the table small, since a window is never read again once
two newer ones exist.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from switchyard.constants import BUDGET_KEY_ATTRIBUTE, BUDGET_TTL_ATTRIBUTE
from switchyard.stores.quota.counters import (
    WINDOW_SECONDS,
    QuotaGrant,
    QuotaStore,
    QuotaTake,
    QuotaUsage,
    ordered,
    refused,
    window_of,
)

_PK = BUDGET_KEY_ATTRIBUTE
_TTL = BUDGET_TTL_ATTRIBUTE
RETENTION_SECONDS = 3600


def _key(counter: str, window: int) -> dict[str, Any]:
    return {_PK: {"S": f"quota#{counter}#{window}"}}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


class DynamoDBQuotaStore(QuotaStore):
    def __init__(
        self,
        table_name: str,
        *,
        client: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(clock=clock)
        if client is None:
            import boto3  # type: ignore[import-untyped]

            client = boto3.client("dynamodb")
        self.table = table_name
        self._client = client

    def _used(self, counter: str, window: int) -> int:
        item = self._client.get_item(
            TableName=self.table, Key=_key(counter, window), ConsistentRead=True
        ).get("Item")
        return int(item["used"]["N"]) if item and "used" in item else 0

    def take(self, takes: Sequence[QuotaTake]) -> QuotaGrant:
        now = self._clock()
        window = window_of(now)
        chosen = ordered(takes)
        previous = {t.counter: self._used(t.counter, window - WINDOW_SECONDS) for t in chosen}
        items: list[dict[str, Any]] = []
        for take in chosen:
            usage = QuotaUsage(window, 0, previous[take.counter], now)
            threshold = usage.threshold(take)
            if threshold < 0:  # fits in no case: nothing to write
                current = self._used(take.counter, window)
                raise refused(take, QuotaUsage(window, current, previous[take.counter], now))
            items.append(
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": _key(take.counter, window),
                        "UpdateExpression": f"ADD used :amount SET {_TTL} = :expires",
                        "ConditionExpression": "attribute_not_exists(used) OR used <= :threshold",
                        "ExpressionAttributeValues": {
                            ":amount": _n(take.amount),
                            ":threshold": _n(threshold),
                            ":expires": _n(window + RETENTION_SECONDS),
                        },
                    }
                }
            )
        try:
            self._client.transact_write_items(TransactItems=items)
        except self._client.exceptions.TransactionCanceledException as exc:
            reasons = exc.response.get("CancellationReasons") or []
            for take, reason in zip(chosen, reasons, strict=False):
                if reason.get("Code") == "ConditionalCheckFailed":
                    current = self._used(take.counter, window)
                    raise refused(
                        take, QuotaUsage(window, current, previous[take.counter], now)
                    ) from None
            raise
        return QuotaGrant(window, tuple(chosen))

    def adjust(self, grant: QuotaGrant, counter: str, delta: int) -> None:
        if delta == 0:
            return
        # A window that expired meanwhile has nothing left to correct.
        with contextlib.suppress(self._client.exceptions.ConditionalCheckFailedException):
            self._client.update_item(
                TableName=self.table,
                Key=_key(counter, grant.window),
                UpdateExpression="ADD used :delta",
                ConditionExpression=f"attribute_exists({_PK})",
                ExpressionAttributeValues={":delta": _n(delta)},
            )

    def usage(self, counter: str) -> QuotaUsage:
        now = self._clock()
        window = window_of(now)
        return QuotaUsage(
            window,
            self._used(counter, window),
            self._used(counter, window - WINDOW_SECONDS),
            now,
        )
