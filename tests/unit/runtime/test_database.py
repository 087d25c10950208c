"""Database connections through a rotated password, on a real PostgreSQL that checks passwords.

The shared test server trusts every login, so a changed password would change nothing there: these
tests start their own server (pgserver) whose `pg_hba.conf` requires SCRAM for every role but the
superuser, and a dedicated role `switchyard_app` whose password they rotate. The secret lives in
moto's Secrets Manager, as the stack's cluster secret does on AWS.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws
from psycopg import sql

from switchyard.constants import (
    DATABASE_SECRET_ARN_ENV,
    DATABASE_URL_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LLM_SCRIPT_ENV,
)
from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import TransientError
from switchyard.runtime import wiring
from switchyard.runtime.database import DatabaseLogin, is_login_failure, login_pool
from switchyard.runtime.lambda_adapter import run_step
from switchyard.stores.migrate import apply_migrations
from tests.unit.runtime.helpers import invocation
from tests.unit.runtime.test_lambda_adapter import context, handler_module

ROLE = "switchyard_app"
DATABASE = "switchyard"
REGION = "us-east-1"
NOTE = {"type": "tool", "tool": "http.request", "args": {"method": "GET", "url": "https://x"}}


@dataclass
class PasswordServer:
    admin: str
    """The superuser's conninfo (trusted on the socket)."""
    socket_dir: str

    def set_password(self, password: str) -> None:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(ROLE), sql.Literal(password)
                )
            )

    def terminate_backends(self) -> int:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (ROLE,),
            ).fetchall()
        return len(rows)

    def backends(self) -> int:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (ROLE,)
            ).fetchone()
        assert row is not None
        return int(row[0])

    def audited_calls(self) -> int:
        with psycopg.connect(f"{self.admin} dbname={DATABASE}", autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM tool_audit").fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture(scope="module")
def server() -> Iterator[PasswordServer]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pgserver

        pgdata = Path(tempfile.mkdtemp(prefix="switchyard-scram-")) / "pg"
        handle = pgserver.get_server(pgdata, cleanup_mode="delete")  # type: ignore[attr-defined]
    try:
        admin = f"host={pgdata} user=postgres dbname=postgres"
        (pgdata / "pg_hba.conf").write_text(
            "local all postgres trust\nlocal all all scram-sha-256\n"
        )
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(ROLE)))
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(DATABASE), sql.Identifier(ROLE)
                )
            )
        found = PasswordServer(admin=admin, socket_dir=str(pgdata))
        found.set_password("first")
        with psycopg.connect(
            host=found.socket_dir, dbname=DATABASE, user=ROLE, password="first"
        ) as conn:
            apply_migrations(conn)
        yield found
    finally:
        handle.cleanup()


@pytest.fixture
def secret(server: PasswordServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The cluster's secret in moto's Secrets Manager, named by the process's environment."""
    server.set_password("first")
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        arn = client.create_secret(Name="cluster", SecretString=_secret_value(server, "first"))[
            "ARN"
        ]
        monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
        monkeypatch.setenv(DATABASE_SECRET_ARN_ENV, arn)
        monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
        monkeypatch.delenv(IDEMPOTENCY_TABLE_ENV, raising=False)
        yield client


def _secret_value(server: PasswordServer, password: str) -> str:
    return json.dumps(
        {
            "username": ROLE,
            "password": password,
            "host": server.socket_dir,
            "port": 5432,
            "dbname": DATABASE,
        }
    )


def rotate(server: PasswordServer, secrets: Any, password: str) -> None:
    """What Secrets Manager's rotation does: a new password in the database and the secret."""
    server.set_password(password)
    secrets.put_secret_value(
        SecretId=secrets.list_secrets()["SecretList"][0]["ARN"],
        SecretString=_secret_value(server, password),
    )


@pytest.fixture
def handlers(secret: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The tool_step handler on the secret's database, its pool built from the environment."""
    script = tmp_path / "script.yaml"
    script.write_text("note:\n  - {output: {status: 200}}\n")
    monkeypatch.setenv(LLM_SCRIPT_ENV, str(script))
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    wiring.step_services.cache_clear()
    wiring.database_pool.cache_clear()
    try:
        yield handler_module("tool_step")
    finally:
        pool = wiring.database_pool() if wiring.database_pool.built else None
        if pool is not None:
            pool.close()
        wiring.step_services.cache_clear()
        wiring.database_pool.cache_clear()


def test_a_step_after_rotation_and_terminated_backends_succeeds_on_the_warm_pool(
    server: PasswordServer, secret: Any, handlers: Any
) -> None:
    before = server.audited_calls()
    event = invocation("note", NOTE).model_dump(mode="json")
    handlers.handler(event, context("tool_step"))  # warm: the pool logged in with "first"
    assert server.backends() >= 1

    rotate(server, secret, "second")
    assert server.terminate_backends() >= 1

    again = invocation("note", NOTE).model_dump(mode="json")
    result = handlers.handler(again, context("tool_step"))

    assert result["output"] == {"status": 200}
    assert server.audited_calls() == before + 2  # both calls reached the database
    assert server.backends() >= 1  # logged in anew, with "second"


def test_a_refused_login_rereads_the_secret_once_and_connects(
    server: PasswordServer, secret: Any
) -> None:
    """What the migration custom resource does: the secret was read just before a rotation."""
    login = DatabaseLogin.from_environment(secrets=secret)
    assert login is not None
    stale = login.conninfo()
    rotate(server, secret, "third")

    with login.connect() as conn:
        assert conn.execute("SELECT current_user").fetchone() == (ROLE,)
    assert login.conninfo() != stale


def test_a_login_refused_after_rereading_fails_without_looping(
    server: PasswordServer, secret: Any
) -> None:
    login = DatabaseLogin.from_environment(secrets=secret)
    assert login is not None
    server.set_password("not-in-the-secret")
    with pytest.raises(psycopg.OperationalError) as raised:
        login.connect()
    assert is_login_failure(raised.value)
    assert "not-in-the-secret" not in str(raised.value)


def test_a_fixed_database_url_is_not_reread(server: PasswordServer) -> None:
    reads: list[str] = []
    url = f"host={server.socket_dir} dbname={DATABASE} user={ROLE} password=wrong"

    def read() -> str:
        reads.append(url)
        return url

    with pytest.raises(psycopg.OperationalError):
        DatabaseLogin(read, rotates=False).connect()
    assert len(reads) == 1


def test_a_pool_that_cannot_log_in_fails_the_step_as_transient(
    server: PasswordServer, secret: Any, handlers: Any
) -> None:
    """The password changed and the secret does not know yet: the pool times out, and the step
    leaves as `transient`, which the compiled Retry waits out."""
    login = DatabaseLogin.from_environment(secrets=secret)
    assert login is not None
    server.set_password("rotation-half-done")
    with login_pool(login, max_size=1, min_size=1, timeout=1) as pool:

        def uses_the_database(*_: Any) -> Any:
            with pool.connection() as conn:
                conn.execute("SELECT 1")
            raise AssertionError("the database let the old password in")

        with pytest.raises(TransientError) as raised:
            run_step(uses_the_database, invocation("note", NOTE), None)
    assert raised.value.name == StepErrorName.TRANSIENT
    lambda_error = raised.value.as_lambda_exception(attempt=1)
    assert type(lambda_error).__name__ == "transient"
    assert "rotation-half-done" not in str(lambda_error)


def test_the_migration_function_migrates_through_the_secret(
    server: PasswordServer, secret: Any
) -> None:
    import importlib.util

    from tests.infra.synth import REPO

    spec = importlib.util.spec_from_file_location(
        "migrate_handler_scram", REPO / "functions" / "migrate" / "handler.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.migrate() == []  # every migration was applied by the fixture, as this role
