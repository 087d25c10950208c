"""Triggers that need code to start a run: webhooks (an HMAC-SHA256 of the raw body).

Schedules, events and queue messages start runs on AWS without code (a small EXPRESS "starter"
state machine per trigger, built by `infra/`); a webhook must be verified first, so its Lambda
function (`functions/webhook_trigger`) calls `handle_webhook` here.
"""

from switchyard.triggers.webhook import (
    DELIVERY_ID_HEADERS,
    SIGNATURE_HEADERS,
    WebhookConfig,
    WebhookRequest,
    WebhookResponse,
    execution_name,
    handle_webhook,
    request_from_http_event,
    resolve_secret,
    signature_matches,
)

__all__ = [
    "DELIVERY_ID_HEADERS",
    "SIGNATURE_HEADERS",
    "WebhookConfig",
    "WebhookRequest",
    "WebhookResponse",
    "execution_name",
    "handle_webhook",
    "request_from_http_event",
    "resolve_secret",
    "signature_matches",
]
