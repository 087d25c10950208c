"""A fresh PostgreSQL database for a test session (real server, never mocked).

The server is `SWITCHYARD_TEST_PG` (default `host=127.0.0.1 port=5432 user=postgres`, trust auth).
`fresh_database()` creates `switchyard_test_<random>`, applies the library's migrations, yields its
conninfo, and drops it afterwards. Use it from a session fixture:

    from tests.pg import pg_conninfo  # noqa: F401  (a pytest fixture)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from switchyard.stores.migrate import apply_migrations

SERVER = os.environ.get("SWITCHYARD_TEST_PG", "host=127.0.0.1 port=5432 user=postgres")


@contextmanager
def fresh_database(*, migrate: bool = True) -> Iterator[str]:
    name = f"switchyard_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{SERVER} dbname=postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    conninfo = f"{SERVER} dbname={name}"
    try:
        if migrate:
            with psycopg.connect(conninfo) as conn:
                apply_migrations(conn)
        yield conninfo
    finally:
        with psycopg.connect(f"{SERVER} dbname=postgres", autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def pg_conninfo() -> Iterator[str]:
    with fresh_database() as conninfo:
        yield conninfo


@pytest.fixture(scope="session")
def pg_pool(pg_conninfo: str) -> Iterator[ConnectionPool]:
    pool = ConnectionPool(pg_conninfo, min_size=2, max_size=30, open=True)
    try:
        yield pool
    finally:
        pool.close()
