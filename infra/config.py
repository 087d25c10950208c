"""The app's settings, from CDK context (`cdk.json`, or `-c key=value` on the command line).

Object and list settings may be given on the command line as JSON
(`-c 'switchyard:tenantDailyLimits={"acme": 50}'`). A setting that does not fit fails the synth
with a `SettingsError` that names it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import yaml
from constructs import Node

from switchyard.constants import DEFAULT_STUCK_AFTER_SECONDS

REPO_ROOT = Path(__file__).resolve().parent.parent

CONTEXT_PREFIX = "switchyard:"
_HOST_PATTERN = re.compile(r"^[A-Za-z0-9*?.-]+$")
_CONNECTION_NAME = re.compile(r"^[A-Za-z0-9_-]+$")

ToolResources = Mapping[str, Mapping[str, Mapping[str, tuple[str, ...]]]]
"""Workflow -> step -> tool -> resources the tool may use there (`switchyard:toolResources`)."""


class SettingsError(ValueError):
    pass


@dataclass(frozen=True)
class Settings:
    root: Path
    """The repository: `functions/`, `layers/`, and the two folders below are relative to it."""
    statemachines: Path
    """Compiled machines, one `<workflow>.asl.json` each (context `switchyard:statemachines`)."""
    workflows: Path
    """Workflow files, read for their triggers (context `switchyard:workflows`)."""
    stack_name: str = "Switchyard"
    db_min_capacity: float = 0
    """Aurora Serverless v2 minimum ACUs: 0 pauses the cluster when idle (docs/deploy.md)."""
    db_max_capacity: float = 4
    db_auto_pause_minutes: int = 10
    reserve_concurrency: bool = True
    """False on accounts whose Lambda concurrency limit is too low to reserve any."""
    log_retention_days: int = 30
    retain_data: bool = True
    """False: `cdk destroy` deletes the database, tables and bucket too (development stacks)."""
    alarm_email: str | None = None
    stuck_after_seconds: int = DEFAULT_STUCK_AFTER_SECONDS
    """A step function running this long without returning leaves its run without a transition
    for as long: the stuck-runs alarm's threshold (docs/runbooks.md)."""
    nat_gateways: int = 1
    provider: str = "anthropic"
    """The model provider of steps that name none: `anthropic` (API key secret) or `bedrock`."""
    http_allowed_hosts: tuple[str, ...] = ()
    """Host patterns http tools may call (`SWITCHYARD_HTTP_ALLOWED_HOSTS`); empty: any host."""
    sql_connections: Mapping[str, str] = field(default_factory=dict)
    """Connection name -> Secrets Manager secret (name or ARN) holding its conninfo."""
    tenant_daily_limits: Mapping[str, float] = field(default_factory=dict)
    """Tenant -> USD per UTC day (`SWITCHYARD_TENANT_DAILY_LIMITS`)."""
    tenant_quotas: Mapping[str, Any] = field(default_factory=dict)
    """Tenant -> model -> tokens and requests per minute (`SWITCHYARD_TENANT_QUOTAS`)."""
    circuit_breakers: Mapping[str, Any] = field(default_factory=dict)
    """The circuit breakers' policy (`SWITCHYARD_CIRCUIT_BREAKER_POLICY`); empty: the defaults."""
    model_prices: Mapping[str, Any] | None = None
    """Model id -> prices, checked against the catalog; shipped as a file in a layer."""
    email_from: str | None = None
    """Sender of `email.send` calls that give no `from` (`SWITCHYARD_EMAIL_FROM`)."""
    tool_resources: ToolResources = field(default_factory=dict)
    """Resources of tool calls that are only known at run time (docs/deploy.md)."""

    @classmethod
    def from_node(cls, node: Node) -> Settings:
        def get(key: str, default: Any = None) -> Any:
            value = node.try_get_context(CONTEXT_PREFIX + key)
            return default if value is None else value

        def flag(key: str, default: bool) -> bool:
            value = get(key, default)
            return value if isinstance(value, bool) else str(value).lower() == "true"

        root = Path(get("root", str(REPO_ROOT))).resolve()
        return cls(
            root=root,
            statemachines=(root / get("statemachines", "statemachines")).resolve(),
            workflows=(root / get("workflows", "workflows")).resolve(),
            stack_name=str(get("stackName", "Switchyard")),
            db_min_capacity=float(get("dbMinCapacity", 0)),
            db_max_capacity=float(get("dbMaxCapacity", 4)),
            db_auto_pause_minutes=int(get("dbAutoPauseMinutes", 10)),
            reserve_concurrency=flag("reserveConcurrency", True),
            log_retention_days=int(get("logRetentionDays", 30)),
            retain_data=flag("retainData", True),
            alarm_email=get("alarmEmail"),
            stuck_after_seconds=_stuck_after(get("stuckAfterSeconds")),
            nat_gateways=int(get("natGateways", 1)),
            provider=str(get("provider", "anthropic")),
            http_allowed_hosts=_hosts(get("httpAllowedHosts")),
            sql_connections=_sql_connections(get("sqlConnections")),
            tenant_daily_limits=_tenant_daily_limits(get("tenantDailyLimits")),
            tenant_quotas=_tenant_quotas(get("tenantQuotas")),
            circuit_breakers=_circuit_breakers(get("circuitBreakers")),
            model_prices=_model_prices(get("modelPrices"), root),
            email_from=_email_from(get("emailFrom")),
            tool_resources=_tool_resources(get("toolResources")),
        )

    @property
    def functions(self) -> Path:
        return self.root / "functions"


# --- the runtime's settings --------------------------------------------------------------------


def _json(key: str, value: Any) -> Any:
    """A value from cdk.json as is; from `-c key=value`, a string to read as JSON."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise SettingsError(f"{CONTEXT_PREFIX}{key}: not JSON: {value!r}") from None


def _object(key: str, value: Any) -> dict[str, Any]:
    value = _json(key, value)
    if not isinstance(value, dict):
        raise SettingsError(f"{CONTEXT_PREFIX}{key}: expected an object, got {value!r}")
    return value


def _stuck_after(value: Any) -> int:
    if value is None:
        return DEFAULT_STUCK_AFTER_SECONDS
    try:
        seconds = int(str(value))
    except ValueError:
        seconds = 0
    if seconds < 1:
        raise SettingsError(
            f"{CONTEXT_PREFIX}stuckAfterSeconds: expected a whole number of seconds (at least 1),"
            f" got {value!r}"
        )
    return seconds


def _hosts(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) and not value.lstrip().startswith("["):
        value = value.split(",")
    value = _json("httpAllowedHosts", value)
    if not isinstance(value, list):
        raise SettingsError(f"{CONTEXT_PREFIX}httpAllowedHosts: expected a list of host patterns")
    hosts = tuple(str(h).strip().lower() for h in value if str(h).strip())
    for host in hosts:
        if not _HOST_PATTERN.match(host):
            raise SettingsError(
                f"{CONTEXT_PREFIX}httpAllowedHosts: {host!r} is not a host pattern "
                "(a host name, `*` for any part: api.example.com, *.example.com; no scheme, "
                "port or path)"
            )
    return hosts


def _sql_connections(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    connections = _object("sqlConnections", value)
    for name, secret in connections.items():
        if not _CONNECTION_NAME.match(name):
            raise SettingsError(
                f"{CONTEXT_PREFIX}sqlConnections: {name!r} is not a connection name "
                "(letters, digits, _ and -)"
            )
        if not isinstance(secret, str) or not secret:
            raise SettingsError(
                f"{CONTEXT_PREFIX}sqlConnections.{name}: expected the name or ARN of the Secrets "
                "Manager secret holding its conninfo (never the conninfo itself)"
            )
        if "=" in secret or "://" in secret:
            raise SettingsError(
                f"{CONTEXT_PREFIX}sqlConnections.{name}: looks like a conninfo; store it in a "
                "Secrets Manager secret and give the secret's name or ARN here"
            )
    return {str(k): str(v) for k, v in connections.items()}


def _tenant_daily_limits(value: Any) -> dict[str, float]:
    if value is None:
        return {}
    limits = _object("tenantDailyLimits", value)
    for tenant, usd in limits.items():
        if isinstance(usd, bool) or not isinstance(usd, int | float) or usd < 0:
            raise SettingsError(
                f"{CONTEXT_PREFIX}tenantDailyLimits.{tenant}: expected USD per day (a number "
                f">= 0), got {usd!r}"
            )
    return dict(limits)


def _tenant_quotas(value: Any) -> dict[str, Any]:
    from switchyard.runtime.quotas import QuotaConfigError, parse_tenant_quotas

    return _runtime_checked("tenantQuotas", value, parse_tenant_quotas, QuotaConfigError)


def _circuit_breakers(value: Any) -> dict[str, Any]:
    from switchyard.runtime.breakers import BreakerConfigError, parse_breaker_policy

    return _runtime_checked("circuitBreakers", value, parse_breaker_policy, BreakerConfigError)


def _runtime_checked(
    key: str, value: Any, parse: Callable[..., object], error: type[Exception]
) -> dict[str, Any]:
    """A JSON object the runtime reads from its environment, checked here the way the runtime
    reads it (`parse(value, source=...)`), so that a bad value fails the synth."""
    if value is None:
        return {}
    checked = _object(key, value)
    try:
        parse(checked, source=f"{CONTEXT_PREFIX}{key}")
    except error as exc:
        raise SettingsError(str(exc)) from None
    return checked


def _model_prices(value: Any, root: Path) -> dict[str, Any] | None:
    """Inline prices, or a JSON or YAML file (relative to the repository), checked the way the
    runtime reads them, so that a bad price fails the synth and not the first model call."""
    from switchyard.runtime.models_catalog import ModelCatalog

    if value is None:
        return None
    where = f"{CONTEXT_PREFIX}modelPrices"
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        path = (root / value).resolve()
        if not path.is_file():
            raise SettingsError(f"{where}: no prices file at {path}")
        text = path.read_text("utf-8")
        try:
            value = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise SettingsError(f"{where}: {path} does not parse: {exc}") from None
        where = str(path)
    prices = _json("modelPrices", value)
    if not isinstance(prices, dict):
        raise SettingsError(f"{where}: a model prices file maps model ids to prices")
    try:
        ModelCatalog().with_overrides(prices)
    except (ValueError, TypeError, AttributeError) as exc:
        raise SettingsError(f"{where}: {exc}") from None
    return prices


def _email_from(value: Any) -> str | None:
    if value is None:
        return None
    _, address = parseaddr(str(value))
    if "@" not in address:
        raise SettingsError(
            f"{CONTEXT_PREFIX}emailFrom: {value!r} is not an email address (a verified SES "
            "identity, or an address of a verified domain)"
        )
    return str(value)


def _tool_resources(value: Any) -> dict[str, dict[str, dict[str, tuple[str, ...]]]]:
    if value is None:
        return {}
    where = f"{CONTEXT_PREFIX}toolResources"
    result: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
    for workflow, steps in _object("toolResources", value).items():
        if not isinstance(steps, dict):
            raise SettingsError(f"{where}.{workflow}: expected step -> tool -> resources")
        for step, tools in steps.items():
            if not isinstance(tools, dict):
                raise SettingsError(f"{where}.{workflow}.{step}: expected tool -> resources")
            for tool, resources in tools.items():
                if isinstance(resources, str):
                    resources = [resources]
                if (
                    not isinstance(resources, list)
                    or not resources
                    or not all(isinstance(r, str) and r for r in resources)
                ):
                    raise SettingsError(
                        f"{where}.{workflow}.{step}.{tool}: expected a list of resource names"
                    )
                result.setdefault(workflow, {}).setdefault(step, {})[tool] = tuple(resources)
    return result
