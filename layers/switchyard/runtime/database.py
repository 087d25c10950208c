"""Connections to the run-state database that survive what a real account does to them.

- **Rotation.** On AWS the login comes from the cluster's Secrets Manager secret, which is rotated
  right after the cluster is created and every 30 days after. A login that fails re-reads the
  secret once and tries again with what it now says (`DatabaseLogin.connect`); the pool's
  connections are made the same way (`login_pool`).
- **Connections that died while idle** (a rotation that terminated backends, a failover, an
  Aurora Serverless pause): the pool checks each connection before handing it out and replaces a
  broken one.
- **What is left** (the database still unreachable, the pool exhausted for its `timeout`) leaves a
  step as `transient` (`transient_database_error`), which the compiled `Retry` waits out instead
  of failing the step for good.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.constants import DATABASE_SECRET_ARN_ENV, DATABASE_URL_ENV
from switchyard.contract.step_errors import TransientError

log = logging.getLogger(__name__)
C = TypeVar("C")

LOGIN_FAILED_SQLSTATES = frozenset({"28P01", "28000"})
"""invalid_password, invalid_authorization_specification."""
_LOGIN_FAILED_TEXT = "authentication failed"
"""libpq reports a refused login as text without a SQLSTATE: `FATAL: password authentication
failed for user "..."` (also SCRAM, md5 and PAM, the last being Aurora's IAM login)."""

POOL_TIMEOUT_SECONDS = 30.0
"""How long a step waits for a pooled connection: an Aurora Serverless v2 cluster paused at 0 ACU
takes about 15 s to resume on connect; past this the step fails `transient` and is retried."""


def is_login_failure(exc: psycopg.OperationalError) -> bool:
    """Whether the server refused the login (wrong or rotated password), rather than being
    unreachable."""
    return exc.sqlstate in LOGIN_FAILED_SQLSTATES or _LOGIN_FAILED_TEXT in str(exc)


class DatabaseLogin:
    """Where the database is and who logs in: `read()` gives a libpq conninfo. With `rotates`
    (the login comes from a secret), a refused login calls `read()` again, once, and retries."""

    def __init__(self, read: Callable[[], str], *, rotates: bool) -> None:
        self._read = read
        self._rotates = rotates
        self._lock = threading.Lock()
        self._conninfo: str | None = None

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, *, secrets: Any = None
    ) -> DatabaseLogin | None:
        """`DATABASE_URL` (fixed), else the secret `SWITCHYARD_DATABASE_SECRET_ARN` names
        (re-read on a refused login); None when neither is set."""
        from switchyard.runtime.wiring import database_conninfo

        env = dict(environ if environ is not None else os.environ)
        if env.get(DATABASE_URL_ENV):
            url = env[DATABASE_URL_ENV]
            return cls(lambda: url, rotates=False)
        if not env.get(DATABASE_SECRET_ARN_ENV):
            return None
        clients: list[Any] = [secrets] if secrets is not None else []

        def read_secret() -> str:
            if not clients:
                import boto3  # type: ignore[import-untyped]

                clients.append(boto3.client("secretsmanager"))
            conninfo = database_conninfo(env, secrets=clients[0])
            assert conninfo is not None  # the secret's ARN is set
            return conninfo

        return cls(read_secret, rotates=True)

    def conninfo(self) -> str:
        """The conninfo last read (read now if never)."""
        with self._lock:
            if self._conninfo is None:
                self._conninfo = self._read()
            return self._conninfo

    def reread(self, refused: str) -> str:
        """The conninfo after `refused` failed to log in: read again, unless another thread
        already did since (then its result)."""
        with self._lock:
            if self._conninfo is None or self._conninfo == refused:
                log.warning("the database refused the login; reading its secret again")
                self._conninfo = self._read()
            return self._conninfo

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        """A new connection (`kwargs` as `psycopg.connect` takes them)."""
        return self.connect_with(psycopg.Connection.connect, **kwargs)

    def connect_with(self, connect: Callable[..., C], **kwargs: Any) -> C:
        """`connect(conninfo, **kwargs)`, and once more with a re-read login if it was refused."""
        conninfo = self.conninfo()
        try:
            return connect(conninfo, **kwargs)
        except psycopg.OperationalError as exc:
            if not self._rotates or not is_login_failure(exc):
                raise
        return connect(self.reread(conninfo), **kwargs)


def login_pool(
    login: DatabaseLogin,
    *,
    max_size: int,
    min_size: int = 1,
    timeout: float = POOL_TIMEOUT_SECONDS,
) -> ConnectionPool[psycopg.Connection[Any]]:
    """An open pool (autocommit connections) whose connections log in through `login` and are
    checked before they are handed out."""

    class LoginConnection(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> LoginConnection:
            parent = super().connect
            return login.connect_with(lambda info, **more: parent(info, **more), **kwargs)

    return ConnectionPool(
        login.conninfo,
        connection_class=LoginConnection,
        kwargs={"autocommit": True},
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        check=ConnectionPool.check_connection,
        open=True,
    )


def transient_database_error(exc: psycopg.OperationalError, *, where: str) -> TransientError:
    """A database failure a later attempt may not meet (unreachable, restarting, the pool busy
    past its timeout), as the step error `transient`. The message is psycopg's, which names the
    host and user but never the password."""
    return TransientError(f"{where}: the database failed ({type(exc).__name__}): {exc}")
