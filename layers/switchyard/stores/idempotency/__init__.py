"""Effectively-once side effects: Powertools idempotency on DynamoDB or PostgreSQL."""

from switchyard.constants import IDEMPOTENCY_TABLE_ENV
from switchyard.stores.idempotency.dynamodb import (
    create_idempotency_table,
    dynamodb_persistence_layer,
)
from switchyard.stores.idempotency.once import (
    IdempotentCalls,
    OutcomeUnknownError,
    OutcomeUnknownTimeoutError,
    RemainingTime,
)
from switchyard.stores.idempotency.postgres import PostgresPersistenceLayer

__all__ = [
    "IDEMPOTENCY_TABLE_ENV",
    "IdempotentCalls",
    "OutcomeUnknownError",
    "OutcomeUnknownTimeoutError",
    "PostgresPersistenceLayer",
    "RemainingTime",
    "create_idempotency_table",
    "dynamodb_persistence_layer",
]
