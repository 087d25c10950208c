"""Webhook triggers: verify the signed delivery (`switchyard.triggers.signing`), then start one run.

A delivery is started at most once: the execution name is derived from its signed delivery id
(`X-Switchyard-Delivery`). Step Functions refuses a second execution of that name
(`ExecutionAlreadyExists`), which answers 200 "duplicate" instead of 202 "started"; a retry that
arrives while the first run is still going, with the same input, gets AWS's idempotent answer
(the same execution) and starts nothing either. A replay under another delivery id does not match
its signature, and one after the timestamp window is refused (401).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from switchyard.constants import (
    WEBHOOK_INPUT_ENV,
    WEBHOOK_SECRET_ENV,
    WEBHOOK_STATE_MACHINE_ARN_ENV,
    WEBHOOK_WORKFLOW_ENV,
)
from switchyard.triggers.signing import RefusedDelivery, verify_delivery

_NAME_PREFIX = "wh-"


class WebhookConfigError(RuntimeError):
    """The webhook function is not configured (a deployment problem, not the sender's)."""


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    workflow: str
    state_machine_arn: str
    secret: str
    """`env:NAME` or `secret:NAME` (Secrets Manager name or ARN)."""
    input: dict[str, Any] = field(default_factory=dict)
    """The trigger's `input` templates over `body`, `headers` and `query`."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> WebhookConfig:
        missing = [
            name
            for name in (WEBHOOK_WORKFLOW_ENV, WEBHOOK_STATE_MACHINE_ARN_ENV, WEBHOOK_SECRET_ENV)
            if not environ.get(name)
        ]
        if missing:
            raise WebhookConfigError(f"webhook function is missing {', '.join(missing)}")
        templates = json.loads(environ.get(WEBHOOK_INPUT_ENV) or "{}")
        if not isinstance(templates, dict):
            raise WebhookConfigError(f"{WEBHOOK_INPUT_ENV} must be a JSON object")
        return cls(
            workflow=environ[WEBHOOK_WORKFLOW_ENV],
            state_machine_arn=environ[WEBHOOK_STATE_MACHINE_ARN_ENV],
            secret=environ[WEBHOOK_SECRET_ENV],
            input=templates,
        )


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    body: bytes
    """The raw body, exactly as signed."""
    headers: dict[str, str] = field(default_factory=dict)
    """Lower-cased names."""
    query: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WebhookResponse:
    status: int
    body: dict[str, Any]

    def to_http(self) -> dict[str, Any]:
        """The API Gateway proxy response."""
        return {
            "statusCode": self.status,
            "headers": {"content-type": "application/json"},
            "body": json.dumps(self.body),
        }


def request_from_http_event(event: Mapping[str, Any]) -> WebhookRequest:
    """An API Gateway proxy event (HTTP API 2.0 or REST 1.0) as a WebhookRequest."""
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode("utf-8")
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    query = {str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items()}
    return WebhookRequest(body=body, headers=headers, query=query)


def resolve_secret(ref: str, *, environ: Mapping[str, str], secrets: Any = None) -> bytes:
    """The HMAC key that `env:NAME` or `secret:NAME` points at."""
    kind, _, name = ref.partition(":")
    if kind == "env":
        value = environ.get(name)
        if not value:
            raise WebhookConfigError(f"webhook secret {ref}: environment variable {name} is unset")
        return value.encode("utf-8")
    if kind == "secret":
        if secrets is None:
            import boto3  # type: ignore[import-untyped]

            secrets = boto3.client("secretsmanager")
        response = secrets.get_secret_value(SecretId=name)
        if response.get("SecretString") is not None:
            return str(response["SecretString"]).encode("utf-8")
        return bytes(response["SecretBinary"])
    raise WebhookConfigError(f"webhook secret {ref!r} must be env:NAME or secret:NAME")


class SecretCache:
    """Keeps a resolved key for `ttl_seconds`, so a rotated secret is picked up without a
    cold start while a burst of deliveries costs one Secrets Manager call."""

    def __init__(
        self,
        loader: Callable[[str], bytes],
        *,
        ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._loader = loader
        self._ttl = ttl_seconds
        self._clock = clock
        self._entries: dict[str, tuple[float, bytes]] = {}

    def get(self, ref: str) -> bytes:
        now = self._clock()
        entry = self._entries.get(ref)
        if entry is None or now - entry[0] >= self._ttl:
            entry = (now, self._loader(ref))
            self._entries[ref] = entry
        return entry[1]


def execution_name(workflow: str, delivery_id: str) -> str:
    """`wh-<sha256>` of the workflow and the (verified) delivery id."""
    digest = hashlib.sha256(f"{workflow}\ndelivery:{delivery_id}".encode()).hexdigest()
    return _NAME_PREFIX + digest


def _body_value(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_input(config: WebhookConfig, request: WebhookRequest) -> dict[str, Any]:
    """The run's input: the trigger's templates rendered over body, headers and query."""
    from switchyard.runtime.rendering import render

    context = {
        "body": _body_value(request.body),
        "headers": request.headers,
        "query": request.query,
    }
    rendered = render(config.input, context)
    assert isinstance(rendered, dict)
    return rendered


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def handle_webhook(
    request: WebhookRequest,
    config: WebhookConfig,
    *,
    secret: bytes,
    sfn: Any,
    on_failure: Callable[[dict[str, Any]], None] | None = None,
    now: Callable[[], float] = time.time,
) -> WebhookResponse:
    """401 when the delivery's signature, delivery id or timestamp does not verify, 422 when the
    input templates fail, 202 when a run started, 200 when this delivery had already started
    one, 502 when the start failed (the verified delivery goes to `on_failure`, e.g. the
    trigger's dead-letter queue, and the sender may retry)."""
    from switchyard.contract.step_errors import TemplateRenderError

    verified = verify_delivery(request.headers, request.body, secret, now=now)
    if isinstance(verified, RefusedDelivery):
        return WebhookResponse(401, {"error": verified.message})
    try:
        inputs = run_input(config, request)
    except TemplateRenderError as exc:
        return WebhookResponse(422, {"error": str(exc)})
    name = execution_name(config.workflow, verified.delivery_id)
    try:
        started = sfn.start_execution(
            stateMachineArn=config.state_machine_arn,
            name=name,
            input=json.dumps(inputs, sort_keys=True, separators=(",", ":")),
        )
    except Exception as exc:
        code = _error_code(exc)
        if code == "ExecutionAlreadyExists":
            return WebhookResponse(200, {"status": "duplicate", "execution_name": name})
        if on_failure is None:
            raise
        on_failure(
            {
                "workflow": config.workflow,
                "execution_name": name,
                "input": inputs,
                "headers": request.headers,
                "body": request.body.decode("utf-8", errors="replace"),
                "error": {"type": code or type(exc).__name__, "message": str(exc)},
            }
        )
        return WebhookResponse(502, {"error": "the run could not be started", "retry": True})
    return WebhookResponse(
        202,
        {"status": "started", "execution_name": name, "execution_arn": started["executionArn"]},
    )
