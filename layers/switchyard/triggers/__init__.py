"""Triggers that need code to start a run: webhooks (an HMAC-SHA256 over the
delivery id, timestamp and raw body: `switchyard.triggers.signing`).

Schedules, events and queue messages start runs on AWS without code (a small EXPRESS "starter"
state machine per trigger, built by `infra/`); a webhook must be verified first, so its Lambda
function (`functions/webhook_trigger`) calls `handle_webhook` here.
"""

from switchyard.triggers.signing import (
    REPLAY_WINDOW_SECONDS,
    RefusedDelivery,
    VerifiedDelivery,
    sign_delivery,
    verify_delivery,
)
from switchyard.triggers.webhook import (
    WebhookConfig,
    WebhookRequest,
    WebhookResponse,
    execution_name,
    handle_webhook,
    request_from_http_event,
    resolve_secret,
)

__all__ = [
    "REPLAY_WINDOW_SECONDS",
    "RefusedDelivery",
    "VerifiedDelivery",
    "WebhookConfig",
    "WebhookRequest",
    "WebhookResponse",
    "execution_name",
    "handle_webhook",
    "request_from_http_event",
    "resolve_secret",
    "sign_delivery",
    "verify_delivery",
]
