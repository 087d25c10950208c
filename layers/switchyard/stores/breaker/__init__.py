"""Circuit breakers: per downstream, closed, open or half-open, shared by every process."""

from switchyard.stores.breaker.breakers import (
    DEFAULT_POLICY,
    Admission,
    BreakerPolicy,
    BreakerState,
    BreakerStore,
    InMemoryBreakerStore,
    Outcome,
)
from switchyard.stores.breaker.dynamodb import DynamoDBBreakerStore
from switchyard.stores.breaker.postgres import PostgresBreakerStore

__all__ = [
    "DEFAULT_POLICY",
    "Admission",
    "BreakerPolicy",
    "BreakerState",
    "BreakerStore",
    "DynamoDBBreakerStore",
    "InMemoryBreakerStore",
    "Outcome",
    "PostgresBreakerStore",
]
