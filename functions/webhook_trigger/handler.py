"""Webhook trigger: API Gateway → verify the signed delivery (id, timestamp, body) → StartExecution.

One function per webhook trigger; the stack sets the SWITCHYARD_WEBHOOK_* variables
(switchyard.constants). The logic is `switchyard.triggers.handle_webhook`.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]
from aws_lambda_powertools import Logger

from switchyard.constants import WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV
from switchyard.triggers import WebhookConfig, handle_webhook, request_from_http_event
from switchyard.triggers.webhook import SecretCache, resolve_secret

logger = Logger()


@cache
def _config() -> WebhookConfig:
    return WebhookConfig.from_env(os.environ)


@cache
def _sfn() -> Any:
    return boto3.client("stepfunctions")


@cache
def _sqs() -> Any:
    return boto3.client("sqs")


def _dead_letter(payload: dict[str, Any]) -> None:
    url = os.environ.get(WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV)
    logger.error("webhook start failed", extra={"error": payload["error"]})
    if url:
        _sqs().send_message(QueueUrl=url, MessageBody=json.dumps(payload))


@cache
def _secrets() -> SecretCache:
    client = boto3.client("secretsmanager")
    return SecretCache(lambda ref: resolve_secret(ref, environ=os.environ, secrets=client))


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    config = _config()
    request = request_from_http_event(event)
    response = handle_webhook(
        request,
        config,
        secret=_secrets().get(config.secret),
        sfn=_sfn(),
        on_failure=_dead_letter,
    )
    logger.info(
        "webhook", extra={"workflow": config.workflow, "status": response.status, **response.body}
    )
    return response.to_http()
