"""The services a handler process uses, built once from its environment.

- Local engine (`DATABASE_URL` set): every store on that PostgreSQL database.
- AWS with database access (`SWITCHYARD_DATABASE_SECRET_ARN`): DynamoDB for idempotency,
  budgets, quota counters and circuit breakers, S3 for large outputs, Aurora for the rest.
- AWS without database access (functions outside the VPC): DynamoDB and S3 as above; the
  audit, call counts and decisions of tools stay in the function's memory and its logs.
- Nothing configured: in-memory stores (a quick experiment; budgets and quotas are not
  enforced).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from psycopg_pool import ConnectionPool

from switchyard.constants import (
    BUDGET_TABLE_ENV,
    DATABASE_HOST_ENV,
    DATABASE_NAME_ENV,
    DATABASE_PORT_ENV,
    DATABASE_SECRET_ARN_ENV,
    DATABASE_URL_ENV,
    DEFAULT_POOL_SIZE,
    IDEMPOTENCY_TABLE_ENV,
    OUTPUT_BUCKET_ENV,
    POOL_SIZE_ENV,
)
from switchyard.gates.callbacks import TaskCallbacks
from switchyard.runtime.large_outputs import OutputStore
from switchyard.runtime.services import StepServices

log = logging.getLogger(__name__)
T = TypeVar("T")


class BuiltOnce(Generic[T]):
    """A zero-argument factory whose result is built once per process, even when the first calls
    come at once: on Lambda a process serves one invocation at a time, but the local engine calls
    the handlers from many threads, and `functools.cache` would build (and leak) a pool each."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._built: list[T] = []
        self._dependents: list[BuiltOnce[Any]] = []
        functools.update_wrapper(self, build)

    def __call__(self) -> T:
        if not self._built:
            with self._lock:
                if not self._built:
                    self._built.append(self._build())
        return self._built[0]

    @property
    def built(self) -> bool:
        """Whether the result has been built (and not forgotten since)."""
        return bool(self._built)

    def cache_clear(self) -> None:
        """Forget the result (tests that change the environment); the next call builds anew.
        What was built from it (`dependents`) is forgotten too: a store kept on a pool that was
        closed and forgotten would otherwise outlive it."""
        with self._lock:
            self._built.clear()
        for dependent in self._dependents:
            dependent.cache_clear()

    def dependents(self, *built: BuiltOnce[Any]) -> None:
        """Declare results built from this one, forgotten whenever this one is."""
        self._dependents.extend(built)


def database_conninfo(environ: dict[str, str] | None = None, *, secrets: Any = None) -> str | None:
    env = environ if environ is not None else dict(os.environ)
    url = env.get(DATABASE_URL_ENV)
    if url:
        return url
    secret_arn = env.get(DATABASE_SECRET_ARN_ENV)
    if not secret_arn:
        return None
    if secrets is None:
        import boto3  # type: ignore[import-untyped]

        secrets = boto3.client("secretsmanager")
    secret = json.loads(secrets.get_secret_value(SecretId=secret_arn)["SecretString"])
    host = env.get(DATABASE_HOST_ENV) or secret["host"]
    port = env.get(DATABASE_PORT_ENV) or secret.get("port", 5432)
    name = env.get(DATABASE_NAME_ENV) or secret.get("dbname", "switchyard")
    return (
        f"host={host} port={port} dbname={name} user={secret['username']}"
        f" password={secret['password']} sslmode=require"
    )


@BuiltOnce
def database_pool() -> ConnectionPool | None:
    """The process's pool: connections checked before use, a rotated secret re-read on a
    refused login (`switchyard.runtime.database`)."""
    from switchyard.runtime.database import DatabaseLogin, login_pool

    login = DatabaseLogin.from_environment()
    if login is None:
        return None
    return login_pool(login, max_size=int(os.environ.get(POOL_SIZE_ENV) or DEFAULT_POOL_SIZE))


@BuiltOnce
def output_stores() -> dict[str, OutputStore]:
    """Every output store this process can read large outputs from, by the name references
    carry: S3 when `SWITCHYARD_OUTPUT_BUCKET` is set, PostgreSQL when there is a database. For
    the functions that read references without being step functions: `render`,
    `approval_notify`."""
    from switchyard.runtime.large_outputs import PostgresOutputStore, S3OutputStore

    stores: dict[str, OutputStore] = {}
    bucket = os.environ.get(OUTPUT_BUCKET_ENV)
    if bucket:
        stores[S3OutputStore.name] = S3OutputStore(bucket)
    pool = database_pool()
    if pool is not None:
        stores[PostgresOutputStore.name] = PostgresOutputStore(pool)
    return stores


@BuiltOnce
def step_services() -> StepServices:
    from switchyard.runtime.services import aws_services, postgres_services

    pool = database_pool()
    on_aws = bool(os.environ.get(IDEMPOTENCY_TABLE_ENV))
    if pool is not None:
        return aws_services(pool) if on_aws else postgres_services(pool)
    if on_aws:
        from switchyard.runtime.breakers import breaker_policy_from_env
        from switchyard.runtime.large_outputs import S3OutputStore
        from switchyard.runtime.tools import GatewayStores
        from switchyard.stores.breaker import DynamoDBBreakerStore
        from switchyard.stores.budget import DynamoDBBudgetLedger
        from switchyard.stores.idempotency import IdempotentCalls, dynamodb_persistence_layer
        from switchyard.stores.quota import DynamoDBQuotaStore

        persistence = dynamodb_persistence_layer(os.environ[IDEMPOTENCY_TABLE_ENV])
        return StepServices(
            tools=GatewayStores(
                idempotency=IdempotentCalls(persistence),
                breakers=DynamoDBBreakerStore(
                    os.environ[BUDGET_TABLE_ENV], policy=breaker_policy_from_env()
                ),
            ),
            ledger=DynamoDBBudgetLedger(os.environ[BUDGET_TABLE_ENV]),
            quota_store=DynamoDBQuotaStore(os.environ[BUDGET_TABLE_ENV]),
            output_store=S3OutputStore(os.environ[OUTPUT_BUCKET_ENV]),
        )
    log.warning("no database and no AWS tables: stores are in memory, budgets and quotas off")
    return StepServices()


class _LocalTokens:
    callbacks: TaskCallbacks | None = None


def serve_task_tokens(callbacks: TaskCallbacks | None) -> None:
    """Where the functions of this process answer task tokens themselves when not on AWS: the
    local engine that runs them here (`switchyard.local.stack` sets it as it builds one)."""
    _LocalTokens.callbacks = callbacks


def task_callbacks() -> TaskCallbacks | None:
    """How a function answers a task token itself (a reset run's gate that replays its recorded
    decision, `switchyard.runtime.replay`): Step Functions' API on AWS, else the local engine of
    this process; None: neither."""
    if os.environ.get(IDEMPOTENCY_TABLE_ENV):  # on AWS (or moto)
        import boto3

        from switchyard.gates.callbacks import Boto3Callbacks

        return Boto3Callbacks(boto3.client("stepfunctions"))  # a rare call: no client is kept
    return _LocalTokens.callbacks


database_pool.dependents(output_stores, step_services)
