"""The budget ledger on DynamoDB: every operation is one `TransactWriteItems`.

DynamoDB conditions cannot add, so each scope keeps its `headroom` (limit minus spent minus
reserved) beside the totals: a reservation fits when `headroom >= amount`, and the same
transaction subtracts it. A scope without a money limit starts with an effectively endless
headroom. Items, in one table keyed by `pk`:

    scope#<scope>                 limit, headroom, spent, reserved, tokens
    steps#<scope>                 steps
    attempt#<scope>#<attempt id>  marks an attempt as counted
    owner#<step key>              r_<reservation id>: {scopes, amount, model, step} per open one
    avg#<model>#<step>            calls, total

Open reservations live as attributes of their owner's item (a step has a handful in flight at
most), so the table holds a few items per step rather than one per call.

Every write of a scope, steps, attempt or owner item sets `expires_at` (the table's TTL
attribute) to `BUDGET_RETENTION_DAYS` after it, so DynamoDB deletes a finished run's items; the
`avg#` items, a handful per model and step that estimates keep learning from, never expire.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from switchyard.constants import (
    BUDGET_KEY_ATTRIBUTE,
    BUDGET_RETENTION_DAYS,
    BUDGET_TTL_ATTRIBUTE,
)
from switchyard.stores.budget.ledger import (
    BudgetLedger,
    Reservation,
    Scope,
    ScopeLimit,
    ScopeTotals,
    exceeded,
    exceeded_steps,
    sorted_limits,
)

_PK = BUDGET_KEY_ATTRIBUTE  # the table's partition key, as the CDK stack creates it
_TTL = BUDGET_TTL_ATTRIBUTE  # the table's TTL attribute, as the CDK stack configures it

UNLIMITED = 10**18
"""Headroom of a scope without a money limit (a trillion dollars in micro-dollars)."""


def create_budget_table(client: Any, table_name: str) -> None:
    """Create the ledger's table (tests and local use; on AWS the CDK stack creates it)."""
    client.create_table(
        TableName=table_name,
        KeySchema=[{"AttributeName": _PK, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": _PK, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": _TTL},
    )


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _int(item: dict[str, Any], name: str, default: int = 0) -> int:
    return int(item[name]["N"]) if name in item else default


def _cancellation_codes(exc: ClientError) -> list[str]:
    reasons = exc.response.get("CancellationReasons") or []
    return [str(reason.get("Code", "None")) for reason in reasons]


class DynamoDBBudgetLedger(BudgetLedger):
    def __init__(
        self,
        table_name: str,
        *,
        client: Any = None,
        clock: Callable[[], float] = time.time,
        retention_days: int = BUDGET_RETENTION_DAYS,
    ) -> None:
        if client is None:
            import boto3  # type: ignore[import-untyped]

            client = boto3.client("dynamodb")
        self.table = table_name
        self._client = client
        self._clock = clock
        self._retention_seconds = retention_days * 86400

    def _expiry(self) -> dict[str, str]:
        """The TTL value of an item written now."""
        return _n(int(self._clock()) + self._retention_seconds)

    def _get(self, pk: str) -> dict[str, Any] | None:
        response = self._client.get_item(
            TableName=self.table, Key={_PK: _s(pk)}, ConsistentRead=True
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def reserve(
        self,
        reservation_id: str,
        amount_micros: int,
        limits: Sequence[ScopeLimit],
        *,
        owner: str,
        model: str | None = None,
        step: str | None = None,
    ) -> Reservation:
        ordered = sorted_limits(limits)
        keys = [limit.scope.key for limit in ordered]
        record: dict[str, Any] = {
            "scopes": {"L": [_s(key) for key in keys]},
            "amount": _n(amount_micros),
        }
        if model is not None:
            record["model"] = _s(model)
        if step is not None:
            record["step"] = _s(step)
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": {_PK: _s(f"owner#{owner}")},
                    "UpdateExpression": f"SET #r = :record, {_TTL} = :expires",
                    "ConditionExpression": "attribute_not_exists(#r)",
                    "ExpressionAttributeNames": {"#r": f"r_{reservation_id}"},
                    "ExpressionAttributeValues": {
                        ":record": {"M": record},
                        ":expires": self._expiry(),
                    },
                }
            }
        ]
        for limit in ordered:
            items.append({"Update": self._take(limit, amount_micros)})
        try:
            self._client.transact_write_items(TransactItems=items)
        except self._client.exceptions.TransactionCanceledException as exc:
            codes = _cancellation_codes(exc)
            if codes and codes[0] == "ConditionalCheckFailed":
                for existing in self.open_reservations(owner):
                    if existing.id == reservation_id:
                        return existing
            for limit, code in zip(ordered, codes[1:], strict=False):
                if code == "ConditionalCheckFailed":
                    raise self._refusal(limit, amount_micros) from None
            raise
        return Reservation(reservation_id, owner, tuple(keys), amount_micros)

    def _take(self, limit: ScopeLimit, amount: int) -> dict[str, Any]:
        initial = limit.max_micros if limit.max_micros is not None else UNLIMITED
        update = (
            "SET reserved = if_not_exists(reserved, :zero) + :amt,"
            " headroom = if_not_exists(headroom, :initial) - :amt,"
            " spent = if_not_exists(spent, :zero), tokens = if_not_exists(tokens, :zero),"
            f" {_TTL} = :expires"
        )
        values: dict[str, Any] = {
            ":zero": _n(0),
            ":amt": _n(amount),
            ":initial": _n(initial),
            ":expires": self._expiry(),
        }
        names: dict[str, str] = {}
        if limit.max_micros is not None:
            update += ", #limit = if_not_exists(#limit, :initial)"
            names["#limit"] = "limit"
        condition = "((attribute_not_exists(pk) AND :initial >= :amt) OR headroom >= :amt)"
        if limit.max_tokens is not None:
            condition += " AND (attribute_not_exists(tokens) OR tokens < :max_tokens)"
            values[":max_tokens"] = _n(limit.max_tokens)
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": {_PK: _s(f"scope#{limit.scope.key}")},
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }
        if names:
            request["ExpressionAttributeNames"] = names
        return request

    def _refusal(self, limit: ScopeLimit, amount: int) -> Exception:
        item = self._get(f"scope#{limit.scope.key}") or {}
        stored_limit = _int(item, "limit", -1)
        return exceeded(
            limit.scope.key,
            amount=amount,
            limit=stored_limit if stored_limit >= 0 else limit.max_micros,
            spent=_int(item, "spent"),
            reserved=_int(item, "reserved"),
            tokens=_int(item, "tokens"),
            max_tokens=limit.max_tokens,
        )

    def _finish(
        self,
        reservation: Reservation,
        *,
        state: str,
        actual: int,
        tokens: int,
    ) -> bool:
        """Settle (`state` settled) or release a reservation; False when it was not open."""
        owner_item = self._get(f"owner#{reservation.owner}") or {}
        attribute = f"r_{reservation.id}"
        if attribute not in owner_item:
            return False
        record = owner_item[attribute]["M"]
        amount = _int(record, "amount")
        scopes = [entry["S"] for entry in record["scopes"]["L"]]
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": {_PK: _s(f"owner#{reservation.owner}")},
                    "UpdateExpression": "REMOVE #r",
                    "ConditionExpression": "attribute_exists(#r)",
                    "ExpressionAttributeNames": {"#r": attribute},
                }
            }
        ]
        for key in sorted(scopes):
            items.append(
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": {_PK: _s(f"scope#{key}")},
                        "UpdateExpression": "SET reserved = reserved - :amt,"
                        " spent = spent + :actual, headroom = headroom + :back,"
                        " tokens = tokens + :tokens",
                        "ExpressionAttributeValues": {
                            ":amt": _n(amount),
                            ":actual": _n(actual),
                            ":back": _n(amount - actual),
                            ":tokens": _n(tokens),
                        },
                    }
                }
            )
        if state == "settled" and "model" in record and "step" in record:
            items.append(
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": {_PK: _s(f"avg#{record['model']['S']}#{record['step']['S']}")},
                        "UpdateExpression": "ADD calls :one, #total :actual",
                        "ExpressionAttributeNames": {"#total": "total"},
                        "ExpressionAttributeValues": {":one": _n(1), ":actual": _n(actual)},
                    }
                }
            )
        try:
            self._client.transact_write_items(TransactItems=items)
        except self._client.exceptions.TransactionCanceledException as exc:
            codes = _cancellation_codes(exc)
            if codes and codes[0] == "ConditionalCheckFailed":
                return False  # settled or released meanwhile by a duplicate request
            raise
        return True

    def settle(self, reservation: Reservation, actual_micros: int, *, tokens: int = 0) -> None:
        self._finish(reservation, state="settled", actual=actual_micros, tokens=tokens)

    def release(self, reservation: Reservation) -> None:
        self._finish(reservation, state="released", actual=0, tokens=0)

    def release_open(self, owner: str) -> int:
        return sum(
            self._finish(reservation, state="released", actual=0, tokens=0)
            for reservation in self.open_reservations(owner)
        )

    def count_step(self, scope: Scope, attempt_id: str, max_steps: int | None) -> int:
        key = scope.key
        expires = self._expiry()
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": {_PK: _s(f"steps#{key}")},
            "UpdateExpression": (
                f"SET steps = if_not_exists(steps, :zero) + :one, {_TTL} = :expires"
            ),
            "ExpressionAttributeValues": {":zero": _n(0), ":one": _n(1), ":expires": expires},
        }
        if max_steps is not None:
            update["ConditionExpression"] = "attribute_not_exists(steps) OR steps < :max"
            update["ExpressionAttributeValues"][":max"] = _n(max_steps)
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": {_PK: _s(f"attempt#{key}#{attempt_id}"), _TTL: expires},
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {"Update": update},
                ]
            )
        except self._client.exceptions.TransactionCanceledException as exc:
            codes = _cancellation_codes(exc)
            if not (codes and codes[0] == "ConditionalCheckFailed"):
                if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                    raise exceeded_steps(key, max_steps or 0) from None
                raise
        return _int(self._get(f"steps#{key}") or {}, "steps")

    def set_limit(self, scope: Scope, max_micros: int | None) -> None:
        pk = f"scope#{scope.key}"
        new_limit = max_micros if max_micros is not None else UNLIMITED
        while True:
            item = self._get(pk)
            if item is None:
                values: dict[str, Any] = {
                    ":h": _n(new_limit),
                    ":zero": _n(0),
                    ":expires": self._expiry(),
                }
                update = (
                    "SET headroom = :h, reserved = :zero, spent = :zero, tokens = :zero,"
                    f" {_TTL} = :expires"
                )
                if max_micros is not None:
                    update += ", #limit = :h"
                try:
                    self._client.update_item(
                        TableName=self.table,
                        Key={_PK: _s(pk)},
                        UpdateExpression=update,
                        ConditionExpression="attribute_not_exists(pk)",
                        ExpressionAttributeValues=values,
                        **(
                            {"ExpressionAttributeNames": {"#limit": "limit"}}
                            if max_micros is not None
                            else {}
                        ),
                    )
                    return
                except self._client.exceptions.ConditionalCheckFailedException:
                    continue
            spent, reserved = _int(item, "spent"), _int(item, "reserved")
            update = f"SET headroom = :h, {_TTL} = :expires"
            remove = " REMOVE #limit" if max_micros is None else ""
            if max_micros is not None:
                update += ", #limit = :limit"
            values = {
                ":h": _n(new_limit - spent - reserved),
                ":spent": _n(spent),
                ":reserved": _n(reserved),
                ":expires": self._expiry(),
            }
            if max_micros is not None:
                values[":limit"] = _n(max_micros)
            try:
                self._client.update_item(
                    TableName=self.table,
                    Key={_PK: _s(pk)},
                    UpdateExpression=update + remove,
                    ConditionExpression="spent = :spent AND reserved = :reserved",
                    ExpressionAttributeNames={"#limit": "limit"},
                    ExpressionAttributeValues=values,
                )
                return
            except self._client.exceptions.ConditionalCheckFailedException:
                continue  # a reservation moved the totals meanwhile; read again

    def totals(self, scope: Scope) -> ScopeTotals:
        item = self._get(f"scope#{scope.key}") or {}
        steps = _int(self._get(f"steps#{scope.key}") or {}, "steps")
        limit = _int(item, "limit", -1)
        return ScopeTotals(
            limit if limit >= 0 else None,
            _int(item, "spent"),
            _int(item, "reserved"),
            _int(item, "tokens"),
            steps,
        )

    def open_reservations(self, owner: str) -> list[Reservation]:
        item = self._get(f"owner#{owner}") or {}
        found: list[Reservation] = []
        for name in sorted(item):
            if name.startswith("r_"):
                record = item[name]["M"]
                found.append(
                    Reservation(
                        name[2:],
                        owner,
                        tuple(entry["S"] for entry in record["scopes"]["L"]),
                        _int(record, "amount"),
                    )
                )
        return found

    def average_cost(self, model: str, step: str) -> int | None:
        item = self._get(f"avg#{model}#{step}")
        if item is None or not _int(item, "calls"):
            return None
        return -(-_int(item, "total") // _int(item, "calls"))
