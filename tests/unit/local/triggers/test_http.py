"""The HTTP faces of local triggers, served by uvicorn on 127.0.0.1 over a real engine and
database: webhooks and queues on the REST router, PutEvents on its own port (reached with boto3)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from switchyard.local.triggers import TriggerService
from switchyard.local.triggers.http import events_app, trigger_router
from switchyard.triggers.signing import sign_delivery
from tests.unit.local.triggers.conftest import SECRET, Stack


class Served:
    def __init__(self, app: FastAPI) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:  # poll until it listens
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def served(stack: Stack) -> Iterator[tuple[TriggerService, str, str]]:
    service = stack.service()
    rest = FastAPI()
    rest.include_router(trigger_router(service))
    api, events = Served(rest), Served(events_app(service))
    service.base_url = api.url
    try:
        yield service, api.url, events.url
    finally:
        api.close()
        events.close()


def signed(service: TriggerService, delivery: str, body: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    stamp = int(service.clock().timestamp())
    return {
        "content": raw,
        "headers": {
            "X-Switchyard-Delivery": delivery,
            "X-Switchyard-Timestamp": str(stamp),
            "X-Switchyard-Signature": sign_delivery(
                SECRET.encode(), timestamp=stamp, delivery_id=delivery, body=raw
            ),
            "Content-Type": "application/json",
        },
    }


def test_a_webhook_starts_one_run_per_delivery(
    stack: Stack, served: tuple[TriggerService, str, str]
) -> None:
    service, url, _ = served
    request = signed(service, "evt-1", {"text": "printer on fire"})
    first = httpx.post(f"{url}/webhooks/{stack.name}", **request)
    assert first.status_code == 202, first.text
    run_id = first.json()["run_id"]
    assert stack.runs() == {run_id: {"body": "printer on fire"}}
    again = httpx.post(f"{url}/webhooks/{stack.name}", **request)
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert again.json()["run_id"] == run_id and len(stack.runs()) == 1


def test_a_bad_signature_is_401_and_starts_nothing(
    stack: Stack, served: tuple[TriggerService, str, str]
) -> None:
    service, url, _ = served
    request = signed(service, "evt-2", {"text": "x"})
    request["content"] = b'{"text": "tampered"}'
    answer = httpx.post(f"{url}/webhooks/{stack.name}", **request)
    assert answer.status_code == 401 and "signature does not match" in answer.json()["error"]
    unsigned = httpx.post(f"{url}/webhooks/{stack.name}", content=b"{}")
    assert unsigned.status_code == 401 and "missing header" in unsigned.json()["error"]
    assert stack.runs() == {}


def test_webhook_answers_for_unknown_workflows_and_unset_secrets(
    stack: Stack, served: tuple[TriggerService, str, str]
) -> None:
    service, url, _ = served
    request = signed(service, "evt-3", {"text": "x"})
    missing = httpx.post(f"{url}/webhooks/no-such-flow", **request)
    assert missing.status_code == 404 and stack.name in missing.json()["error"]
    service.environ = {}
    unset = httpx.post(f"{url}/webhooks/{stack.name}", **request)
    assert unset.status_code == 503
    assert "TEST_WEBHOOK_SECRET" in unset.json()["error"] and SECRET not in unset.text


def test_a_queued_message_starts_a_run(
    stack: Stack, served: tuple[TriggerService, str, str]
) -> None:
    service, url, _ = served
    sent = httpx.post(f"{url}/queues/tickets/messages", content=b'{"text": "from the queue"}')
    assert sent.status_code == 202
    [delivery] = service.tick()
    assert delivery.delivery_id == sent.json()["message_id"] and delivery.status == "started"
    assert stack.runs() == {delivery.run_id: {"body": "from the queue"}}
    bad = httpx.post(f"{url}/queues/no%20spaces/messages", content=b"x")
    assert bad.status_code in (400, 404)
    big = httpx.post(f"{url}/queues/tickets/messages", content=b"x" * (256 * 1024 + 1))
    assert big.status_code == 413


def test_put_events_starts_the_workflows_whose_pattern_matches(
    stack: Stack, served: tuple[TriggerService, str, str]
) -> None:
    _, url, events_url = served
    events = boto3.client(
        "events",
        endpoint_url=events_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    answer = events.put_events(
        Entries=[
            {"Source": "shop.tickets", "DetailType": "TicketCreated", "Detail": '{"text": "hi"}'},
            {"Source": "shop.orders", "DetailType": "TicketCreated", "Detail": '{"text": "no"}'},
            {"Source": "shop.tickets", "DetailType": "TicketCreated", "Detail": "not json"},
        ]
    )
    assert answer["FailedEntryCount"] == 1
    assert answer["Entries"][2]["ErrorCode"] == "InvalidArgument"
    assert list(stack.runs().values()) == [{"body": "hi"}]
    listing = httpx.get(f"{url}/triggers").json()["triggers"]
    event = next(t for t in listing if t["key"] == stack.key("event"))
    assert event["deliveries"][0]["delivery_id"] == answer["Entries"][0]["EventId"]


def test_the_events_port_refuses_other_operations(served: tuple[TriggerService, str, str]) -> None:
    _, _, events_url = served
    answer = httpx.post(events_url, content=b"{}", headers={"X-Amz-Target": "AWSEvents.ListRules"})
    assert answer.status_code == 400
    assert answer.json()["__type"] == "UnknownOperationException"


def test_the_aws_cli_puts_events_on_the_events_port(
    stack: Stack, served: tuple[TriggerService, str, str]
) -> None:
    import os
    import shutil
    import subprocess

    _, _, events_url = served
    aws = shutil.which("aws")
    assert aws is not None, "the AWS CLI is part of the development machine"
    entries = [
        {"Source": "shop.tickets", "DetailType": "TicketCreated", "Detail": '{"text": "cli"}'}
    ]
    done = subprocess.run(
        [aws, "events", "put-events", "--endpoint-url", events_url, "--region", "us-east-1",
         "--entries", json.dumps(entries)],
        env={**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["FailedEntryCount"] == 0
    assert list(stack.runs().values()) == [{"body": "cli"}]
