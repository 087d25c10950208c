"""Webhook triggers: verify the sender's HMAC-SHA256 of the raw body, then start one run.

A delivery is started at most once: the execution name is derived from the sender's delivery id
(`X-Switchyard-Delivery`, `Idempotency-Key`, `X-GitHub-Delivery`, ...) or, without one, from the
SHA-256 of the raw body. Step Functions refuses a second execution of that name
(`ExecutionAlreadyExists`), which answers 200 "duplicate" instead of 202 "started"; a retry that
arrives while the first run is still going, with the same input, gets AWS's idempotent answer
(the same execution) and starts nothing either.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
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

SIGNATURE_HEADERS: tuple[str, ...] = (
    "x-switchyard-signature",
    "x-hub-signature-256",
    "x-signature-256",
)
"""Where the signature may be, first match wins: `sha256=<hex>`, `<hex>` or base64 of the MAC."""

DELIVERY_ID_HEADERS: tuple[str, ...] = (
    "x-switchyard-delivery",
    "idempotency-key",
    "x-github-delivery",
    "x-webhook-id",
    "x-delivery-id",
)
"""Headers that name a delivery; a redelivery of the same event carries the same value."""

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


def signature_matches(body: bytes, signature: str | None, secret: bytes) -> bool:
    """Whether `signature` is the HMAC-SHA256 of `body` under `secret` (constant-time)."""
    if not signature:
        return False
    given = signature.strip()
    if given.lower().startswith("sha256="):
        given = given[len("sha256=") :]
    if not given.isascii():
        return False
    digest = hmac.new(secret, body, hashlib.sha256).digest()
    if hmac.compare_digest(given.lower().encode("ascii"), digest.hex().encode("ascii")):
        return True
    try:
        decoded = base64.b64decode(given, validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(decoded, digest)


def delivery_id(request: WebhookRequest) -> str | None:
    for header in DELIVERY_ID_HEADERS:
        value = request.headers.get(header, "").strip()
        if value:
            return value
    return None


def execution_name(workflow: str, request: WebhookRequest) -> str:
    """`wh-<sha256>` of the delivery id, or of the raw body when the sender sends none."""
    found = delivery_id(request)
    key = f"delivery:{found}" if found else f"body:{hashlib.sha256(request.body).hexdigest()}"
    digest = hashlib.sha256(f"{workflow}\n{key}".encode()).hexdigest()
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
) -> WebhookResponse:
    """401 on a bad signature, 422 when the input templates fail, 202 when a run started, 200
    when this delivery had already started one, 502 when the start failed (the verified delivery
    goes to `on_failure`, e.g. the trigger's dead-letter queue, and the sender may retry)."""
    from switchyard.runtime.errors import TemplateRenderError

    signature = next(
        (request.headers[h] for h in SIGNATURE_HEADERS if request.headers.get(h)), None
    )
    if not signature_matches(request.body, signature, secret):
        return WebhookResponse(401, {"error": "invalid or missing signature"})
    try:
        inputs = run_input(config, request)
    except TemplateRenderError as exc:
        return WebhookResponse(422, {"error": str(exc)})
    name = execution_name(config.workflow, request)
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
