"""A fresh PostgreSQL database for a test session (real server, never mocked).

The server is `SWITCHYARD_TEST_PG` (default `host=127.0.0.1 port=5432 user=postgres`, trust auth).
`fresh_database()` creates `switchyard_test_<random>` with the library's migrations applied, yields
its conninfo, and drops it afterwards. Use it from a session fixture:

    from tests.pg import pg_conninfo  # noqa: F401  (a pytest fixture)

Two things keep a fresh database cheap (many tests ask for one of their own): the migrations run
once per process, into a template database every migrated one is copied from (`CREATE DATABASE ...
TEMPLATE`: the same schema and `schema_migrations` rows as migrating it); and a database is dropped
in the background (PostgreSQL 15 checkpoints on every `DROP DATABASE`: half a second the test need
not wait for). `finish()` waits for the drops and drops the template.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from switchyard.stores.migrate import apply_migrations

SERVER = os.environ.get("SWITCHYARD_TEST_PG", "host=127.0.0.1 port=5432 user=postgres")


@contextmanager
def fresh_database(*, migrate: bool = True) -> Iterator[str]:
    """A new database: migrated (copied from this process's migrated template), or empty."""
    name = _new_name()
    _create(name, template=_migrated_template() if migrate else None)
    try:
        yield f"{SERVER} dbname={name}"
    finally:
        _forget_runtime_pool(name)
        _dropping.append(_DROPS.submit(_drop, name))


def _forget_runtime_pool(name: str) -> None:
    """The step runtime's process-wide pool closed and forgotten if it was built for this
    database: a later module (whichever pytest-xdist hands this process) may point
    `DATABASE_URL` elsewhere, and the pool would go on lending connections to a dropped
    database. A pool built for another database (a package's shared stack) is kept."""
    wiring = sys.modules.get("switchyard.runtime.wiring")
    if wiring is None or not wiring.database_pool.built:
        return
    pool = wiring.database_pool()
    if pool is None:
        return
    conninfo = pool.conninfo  # the runtime's pool reads it through its login (a method)
    if f"dbname={name}" in (conninfo() if callable(conninfo) else conninfo).split():
        wiring.database_pool.cache_clear()
        pool.close()


_DROPS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tests-pg-drop")
"""Drops databases one at a time in the background."""
_dropping: list[Future[None]] = []
_TEMPLATE_LOCK = threading.Lock()
_template: str | None = None


def _migrated_template() -> str:
    """This process's template: created and migrated at the first call, dropped by `finish()`.
    Nothing connects to it afterwards (a template with a connection cannot be copied)."""
    global _template
    with _TEMPLATE_LOCK:
        if _template is None:
            name = _new_name()
            _create(name, template=None)
            try:
                with psycopg.connect(f"{SERVER} dbname={name}") as conn:
                    apply_migrations(conn)
            except BaseException:
                _drop(name)
                raise
            _template = name
        return _template


def finish() -> None:
    """Wait for the background drops, then drop the template. At the end of a pytest session
    (tests/conftest.py: an xdist worker may leave without running `atexit`), else at exit."""
    global _template
    wait(_dropping)
    _dropping.clear()
    with _TEMPLATE_LOCK:
        if _template is not None:
            _drop(_template)
            _template = None


atexit.register(finish)


def _new_name() -> str:
    """`switchyard_test_<random>`; under `pytest -n`, `switchyard_test_gw1_<random>` in gw1."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"switchyard_test_{worker + '_' if worker else ''}{uuid.uuid4().hex[:12]}"


def _create(name: str, *, template: str | None) -> None:
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with psycopg.connect(f"{SERVER} dbname=postgres", autocommit=True) as admin:
        admin.execute(statement)


def _drop(name: str) -> None:
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
