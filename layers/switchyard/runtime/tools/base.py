"""What a tool is, and what it gets to work with.

A `Tool` has a name, a description and an input schema (what the model sees), a side effect (how
the gateway protects it), and `invoke(args, env)`. The `ToolEnvironment` carries the outside world
a tool may touch: settings, secrets, AWS clients, HTTP and SQL connections; tests hand in moto
clients and mock transports, production the defaults.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from botocore.exceptions import (  # type: ignore[import-untyped]
    NoCredentialsError,
    NoRegionError,
)

from switchyard.contract.step_errors import PermanentError
from switchyard.model import SideEffect
from switchyard.runtime.breakers import CircuitBreakers
from switchyard.runtime.clock import Deadline
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.runtime.settings import (
    EMAIL_FROM_ENV,
    HTTP_ALLOWED_HOSTS_ENV,
    SECRET_ENV_PREFIX,
    SECRET_REFERENCE_PREFIX,
    SMTP_URL_ENV,
    SQL_CONNECTION_ENV_PREFIX,
)


@dataclass(frozen=True, slots=True)
class CallInfo:
    """The call a tool is serving, for what it passes downstream (deduplication ids, timeouts)."""

    run_id: str
    step_id: str
    idempotency_key: str
    timeout: float = 30.0
    """Seconds the call may take (bounded by the attempt's deadline)."""
    side_effect: SideEffect | None = None
    """The call's side effect as the gateway decided it; None when a tool is invoked directly.
    A tool with `records_own_effects` makes an `idempotent` call once per `idempotency_key`."""
    rate_limits: RateLimitGate | None = None
    """Where a Retry-After an endpoint sent is kept, and waited out before the next call to it
    (the model calls' gate); None: not honoured (a tool invoked directly)."""
    deadline: Deadline | None = None
    """The attempt's deadline: a wait for a Retry-After must end before it."""
    breakers: CircuitBreakers | None = None
    """The circuits of the hosts a tool calls (`host:<name>[:<port>]`); None: not guarded."""


class Tool(Protocol):
    """A tool may also set `records_own_effects = True`: it records its idempotency key in the
    same transaction as its effect (`sql.query`), so the gateway does not wrap its idempotent
    calls in Powertools, whose in-progress record cannot close the gap after a crash."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect: ...

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any: ...


def _env_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).upper()


class SecretResolver:
    """Secrets by name: `SWITCHYARD_SECRET_<NAME>` first, else Secrets Manager (cached)."""

    def __init__(
        self,
        *,
        values: Mapping[str, str] | None = None,
        client_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._values = dict(values or {})
        self._client_factory = client_factory
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> str:
        if name in self._values:
            return self._values[name]
        from_env = os.environ.get(SECRET_ENV_PREFIX + _env_name(name))
        if from_env is not None:
            return from_env
        with self._lock:
            if name not in self._cache:
                local = f"or set {SECRET_ENV_PREFIX}{_env_name(name)} to the secret's value"
                client = (
                    self._client_factory()
                    if self._client_factory
                    else _boto("secretsmanager", hint=local)
                )
                try:
                    value = client.get_secret_value(SecretId=name)["SecretString"]
                except (NoRegionError, NoCredentialsError) as exc:
                    raise missing_aws_setting(
                        f"secret {name!r}", exc, service="secretsmanager", hint=local
                    ) from None
                except Exception as exc:
                    raise PermanentError(
                        f"secret {name!r} could not be read: {exc} ({local})"
                    ) from None
                self._cache[name] = str(value)
            return self._cache[name]


def conninfo_from_secret(value: str) -> str:
    """A secret's conninfo: the value itself (a libpq conninfo or URL), or, for a secret in the
    RDS layout (JSON `host`, `port`, `dbname`, `username`, `password`), one built from it with
    TLS required."""
    try:
        data = json.loads(value)
    except ValueError:
        return value
    if not isinstance(data, dict) or "host" not in data or "username" not in data:
        return value
    from psycopg.conninfo import make_conninfo

    return make_conninfo(
        host=str(data["host"]),
        port=str(data.get("port", 5432)),
        dbname=str(data.get("dbname", "postgres")),
        user=str(data["username"]),
        password=str(data.get("password", "")),
        sslmode="require",
    )


_AWS_SETUP = (
    "set AWS_REGION (or AWS_DEFAULT_REGION) and credentials for a real account, or "
    "AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_{service}) with AWS_REGION for a local one such as "
    "moto_server"
)


def missing_aws_setting(
    what: str, exc: Exception, *, service: str = "", hint: str = ""
) -> Exception:
    """botocore's NoRegionError / NoCredentialsError as a `permanent` step error that says what
    to set (boto3 reads AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE> and AWS_REGION itself)."""
    service_env = _env_name(service) if service else "<SERVICE>"
    lack = "no AWS credentials" if isinstance(exc, NoCredentialsError) else "no AWS region"
    message = f"{what}: {lack}: {_AWS_SETUP.format(service=service_env)}"
    return PermanentError(f"{message} ({hint})" if hint else message)


def _boto(service: str, hint: str = "") -> Any:
    import boto3  # type: ignore[import-untyped]

    # boto3 reads AWS_DEFAULT_REGION and the config file, not AWS_REGION, which every other
    # AWS SDK (and Lambda) sets: honour it too, below boto3's own settings.
    region = None if os.environ.get("AWS_DEFAULT_REGION") else os.environ.get("AWS_REGION")
    try:
        return boto3.client(service, region_name=region or None)
    except NoRegionError as exc:
        raise missing_aws_setting(service, exc, service=service, hint=hint) from None


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every call: loading the CA bundle costs 35-100 ms, the client 1 ms."""
    return httpx.create_ssl_context()


@dataclass
class ToolEnvironment:
    """The outside world of tools; every field has a production default."""

    http_allowed_hosts: tuple[str, ...] | None = None
    """Host patterns `http.request` and http tools may call; None: from the environment."""
    sql_connections: dict[str, str] = field(default_factory=dict)
    """Connection name -> conninfo; names not here come from `SWITCHYARD_SQL_<NAME>`."""
    secrets: SecretResolver = field(default_factory=SecretResolver)
    aws_clients: dict[str, Any] = field(default_factory=dict)
    """Service name -> boto3 client (created on first use when missing)."""
    http_transport: httpx.BaseTransport | None = None
    email_from: str | None = None
    python_functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    """`module:function` -> callable, for tools not importable by name (tests, plugins)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    smtp_url: str | None = None
    """Where `email.send` sends; None: `SWITCHYARD_SMTP_URL`, and SES when that is unset too."""

    def aws(self, service: str, *, hint: str = "") -> Any:
        """The service's client; a `permanent` error naming what to set when boto3 has no
        region (`hint` adds the tool's own alternative)."""
        with self._lock:
            if service not in self.aws_clients:
                self.aws_clients[service] = _boto(service, hint)
            return self.aws_clients[service]

    def smtp(self) -> str | None:
        return self.smtp_url or os.environ.get(SMTP_URL_ENV) or None

    def allowed_hosts(self) -> tuple[str, ...] | None:
        if self.http_allowed_hosts is not None:
            return self.http_allowed_hosts
        raw = os.environ.get(HTTP_ALLOWED_HOSTS_ENV)
        if not raw:
            return None
        return tuple(part.strip().lower() for part in raw.split(",") if part.strip())

    def host_allowed(self, host: str) -> bool:
        patterns = self.allowed_hosts()
        if patterns is None:
            return True
        return any(fnmatch.fnmatchcase(host.lower(), pattern) for pattern in patterns)

    def sql_conninfo(self, name: str) -> str:
        if name in self.sql_connections:
            return self.sql_connections[name]
        value = os.environ.get(SQL_CONNECTION_ENV_PREFIX + _env_name(name))
        if value and value.startswith(SECRET_REFERENCE_PREFIX):
            # On AWS the variable names a Secrets Manager secret: a conninfo holds a password,
            # which must not show in the function's configuration.
            return conninfo_from_secret(self.secrets.get(value[len(SECRET_REFERENCE_PREFIX) :]))
        if value:
            return value
        raise PermanentError(
            f"no SQL connection named {name!r}: set {SQL_CONNECTION_ENV_PREFIX}{_env_name(name)}"
        )

    def http_client(self, timeout: float) -> httpx.Client:
        return httpx.Client(transport=self.http_transport, timeout=timeout, verify=_tls())

    def sender(self) -> str:
        sender = self.email_from or os.environ.get(EMAIL_FROM_ENV)
        if not sender:
            raise PermanentError(f"email.send needs `from` or {EMAIL_FROM_ENV}")
        return sender


def canonical_json(value: Any) -> str:
    """One spelling per value, for hashes of arguments."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
