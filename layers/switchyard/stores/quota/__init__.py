"""Quotas: per-minute counters of tokens and requests, taken atomically before a model call."""

from switchyard.stores.quota.counters import (
    WINDOW_SECONDS,
    QuotaGrant,
    QuotaStore,
    QuotaTake,
    QuotaUsage,
    window_of,
)
from switchyard.stores.quota.dynamodb import DynamoDBQuotaStore
from switchyard.stores.quota.postgres import PostgresQuotaStore

__all__ = [
    "WINDOW_SECONDS",
    "DynamoDBQuotaStore",
    "PostgresQuotaStore",
    "QuotaGrant",
    "QuotaStore",
    "QuotaTake",
    "QuotaUsage",
    "window_of",
]
