"""Webhook triggers: signature checks, execution names, and starts on moto's Step Functions."""

from __future__ import annotations

import base64
import json
from typing import Any

import boto3
import pytest
from moto import mock_aws

from switchyard.constants import (
    WEBHOOK_INPUT_ENV,
    WEBHOOK_SECRET_ENV,
    WEBHOOK_STATE_MACHINE_ARN_ENV,
    WEBHOOK_WORKFLOW_ENV,
)
from switchyard.triggers import (
    REPLAY_WINDOW_SECONDS,
    WebhookConfig,
    WebhookRequest,
    execution_name,
    handle_webhook,
    request_from_http_event,
    resolve_secret,
    sign_delivery,
)
from switchyard.triggers.webhook import SecretCache, WebhookConfigError

SECRET = b"s3cret"
BODY = json.dumps({"ticket": {"id": "T-1", "text": "printer on fire"}}).encode()
REGION = "us-east-1"
PASS_MACHINE = json.dumps({"StartAt": "wait", "States": {"wait": {"Type": "Pass", "End": True}}})


NOW = 1_800_000_000


def signed(delivery: str = "d-1", body: bytes = BODY, timestamp: int = NOW) -> dict[str, str]:
    return {
        "x-switchyard-delivery": delivery,
        "x-switchyard-timestamp": str(timestamp),
        "x-switchyard-signature": sign_delivery(
            SECRET, timestamp=timestamp, delivery_id=delivery, body=body
        ),
    }


def handle(request: WebhookRequest, config: WebhookConfig, sfn: Any, **kw: Any) -> Any:
    return handle_webhook(request, config, secret=SECRET, sfn=sfn, now=lambda: NOW, **kw)


def test_execution_name_comes_from_the_delivery_id() -> None:
    name = execution_name("tickets", "d-1")
    assert name == execution_name("tickets", "d-1")
    assert name != execution_name("tickets", "d-2")
    assert name != execution_name("other-workflow", "d-1")
    assert name.startswith("wh-") and len(name) <= 80
    assert all(c.isalnum() or c == "-" for c in name)


def test_http_api_event_becomes_a_request_with_the_raw_body() -> None:
    event = {
        "body": base64.b64encode(BODY).decode(),
        "isBase64Encoded": True,
        "headers": {"X-Hub-Signature-256": "sha256=ab"},
        "queryStringParameters": {"source": "shop"},
    }
    request = request_from_http_event(event)
    assert request.body == BODY
    assert request.headers == {"x-hub-signature-256": "sha256=ab"}
    assert request.query == {"source": "shop"}
    assert request_from_http_event({"body": None, "headers": None}).body == b""


def test_config_from_env_names_what_is_missing() -> None:
    with pytest.raises(WebhookConfigError, match=WEBHOOK_SECRET_ENV):
        WebhookConfig.from_env({WEBHOOK_WORKFLOW_ENV: "w", WEBHOOK_STATE_MACHINE_ARN_ENV: "arn"})
    config = WebhookConfig.from_env(
        {
            WEBHOOK_WORKFLOW_ENV: "w",
            WEBHOOK_STATE_MACHINE_ARN_ENV: "arn",
            WEBHOOK_SECRET_ENV: "env:KEY",
            WEBHOOK_INPUT_ENV: '{"a": "{{ body.a }}"}',
        }
    )
    assert config.input == {"a": "{{ body.a }}"}


def test_secret_from_env_and_from_secrets_manager() -> None:
    assert resolve_secret("env:KEY", environ={"KEY": "abc"}) == b"abc"
    with pytest.raises(WebhookConfigError, match="KEY is unset"):
        resolve_secret("env:KEY", environ={})
    with pytest.raises(WebhookConfigError, match="env:NAME or secret:NAME"):
        resolve_secret("vault:KEY", environ={})
    with mock_aws():
        client = boto3.client("secretsmanager", region_name=REGION)
        client.create_secret(Name="shop/webhook", SecretString="from-sm")
        assert resolve_secret("secret:shop/webhook", environ={}, secrets=client) == b"from-sm"


def test_secret_cache_reloads_after_its_ttl() -> None:
    now = [0.0]
    loads: list[str] = []

    def loader(ref: str) -> bytes:
        loads.append(ref)
        return f"key{len(loads)}".encode()

    cache = SecretCache(loader, ttl_seconds=300, clock=lambda: now[0])
    assert cache.get("env:K") == b"key1"
    now[0] = 299
    assert cache.get("env:K") == b"key1"
    now[0] = 300
    assert cache.get("env:K") == b"key2"


@pytest.fixture
def sfn() -> Any:
    with mock_aws():
        client = boto3.client("stepfunctions", region_name=REGION)
        yield client


def _machine(sfn: Any) -> str:
    return str(
        sfn.create_state_machine(
            name="tickets",
            definition=PASS_MACHINE,
            roleArn="arn:aws:iam::123456789012:role/sfn",
        )["stateMachineArn"]
    )


def _config(arn: str) -> WebhookConfig:
    return WebhookConfig(
        workflow="tickets",
        state_machine_arn=arn,
        secret="env:KEY",
        input={"ticket_id": "{{ body.ticket.id }}", "source": "{{ query.source }}"},
    )


def test_a_signed_delivery_starts_one_run_with_the_rendered_input(sfn: Any) -> None:
    config = _config(_machine(sfn))
    request = WebhookRequest(body=BODY, headers=signed("d-1"), query={"source": "shop"})
    response = handle(request, config, sfn)
    assert response.status == 202
    assert response.body["execution_name"] == execution_name("tickets", "d-1")
    described = sfn.describe_execution(executionArn=response.body["execution_arn"])
    assert json.loads(described["input"]) == {"ticket_id": "T-1", "source": "shop"}


def test_a_redelivery_starts_no_second_run(sfn: Any) -> None:
    arn = _machine(sfn)
    config = _config(arn)
    request = WebhookRequest(body=BODY, headers=signed("d-1"), query={"source": "shop"})
    first = handle(request, config, sfn)
    assert first.status == 202
    # While the run is going, StartExecution with the same name and input is idempotent on AWS
    # (and on moto): the same execution comes back.
    while_running = handle(request, config, sfn)
    assert while_running.body["execution_arn"] == first.body["execution_arn"]
    sfn.stop_execution(executionArn=first.body["execution_arn"])
    after_it_ended = handle(request, config, sfn)
    assert after_it_ended.status == 200
    assert after_it_ended.body["status"] == "duplicate"
    assert len(sfn.list_executions(stateMachineArn=arn)["executions"]) == 1


def test_a_captured_request_replayed_with_a_new_delivery_id_starts_nothing(sfn: Any) -> None:
    arn = _machine(sfn)
    config = _config(arn)
    captured = WebhookRequest(body=BODY, headers=signed("d-1"), query={"source": "shop"})
    assert handle(captured, config, sfn).status == 202
    replayed = WebhookRequest(
        body=BODY,
        headers={**captured.headers, "x-switchyard-delivery": "d-2"},
        query={"source": "shop"},
    )
    response = handle(replayed, config, sfn)
    assert response.status == 401
    assert "does not match" in response.body["error"]
    later = handle_webhook(
        captured, config, secret=SECRET, sfn=sfn, now=lambda: NOW + REPLAY_WINDOW_SECONDS + 1
    )
    assert later.status == 401
    assert len(sfn.list_executions(stateMachineArn=arn)["executions"]) == 1


def test_a_bad_signature_is_401_and_starts_nothing(sfn: Any) -> None:
    arn = _machine(sfn)
    request = WebhookRequest(body=BODY, headers=signed(body=b"other"))
    response = handle(request, _config(arn), sfn)
    assert response.status == 401
    assert response.to_http()["statusCode"] == 401
    assert sfn.list_executions(stateMachineArn=arn)["executions"] == []


def test_an_unsigned_body_only_signature_is_401_naming_the_missing_headers(sfn: Any) -> None:
    arn = _machine(sfn)
    request = WebhookRequest(body=BODY, headers={"x-hub-signature-256": "sha256=" + "0" * 64})
    response = handle(request, _config(arn), sfn)
    assert response.status == 401
    assert "X-Switchyard-Delivery" in response.body["error"]
    assert sfn.list_executions(stateMachineArn=arn)["executions"] == []


def test_a_template_that_fails_is_422(sfn: Any) -> None:
    arn = _machine(sfn)
    request = WebhookRequest(body=b"not json", headers=signed(body=b"not json"))
    response = handle(request, _config(arn), sfn)
    assert response.status == 422
    assert sfn.list_executions(stateMachineArn=arn)["executions"] == []


def test_a_failed_start_keeps_the_delivery_and_answers_502(sfn: Any) -> None:
    config = _config("arn:aws:states:us-east-1:123456789012:stateMachine:missing")
    request = WebhookRequest(body=BODY, headers=signed(), query={"source": "shop"})
    kept: list[dict[str, Any]] = []
    response = handle(request, config, sfn, on_failure=kept.append)
    assert response.status == 502
    assert kept[0]["workflow"] == "tickets"
    assert kept[0]["input"] == {"ticket_id": "T-1", "source": "shop"}
    assert kept[0]["error"]["type"] == "StateMachineDoesNotExist"
