"""Every built-in tool against a real server on this machine, configured only as a user would:
`AWS_ENDPOINT_URL` + `AWS_REGION` for a `moto_server` process, `SWITCHYARD_SMTP_URL` for an
aiosmtpd server, `SWITCHYARD_SECRET_<NAME>` for a Slack webhook served by a local HTTP server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP as SmtpProtocol  # noqa: N811
from aiosmtpd.smtp import Envelope, Session

from switchyard.contract.step_errors import PermanentError, TransientError
from switchyard.runtime.tools import CallInfo, ToolEnvironment, ToolRegistry

CALL = CallInfo("run-1", "send", "run-1:send", timeout=5.0)
AWS_SETTINGS = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)


def invoke(name: str, args: dict[str, Any], env: ToolEnvironment | None = None) -> Any:
    return ToolRegistry().get(name).invoke(args, env or ToolEnvironment(), CALL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in AWS_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("SWITCHYARD_SMTP_URL", raising=False)
    # boto3's default session keeps the credentials it found first: start from none.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # poll until it answers; nothing here waits for a fixed time
            try:
                httpx.get(f"{url}/moto-api/", timeout=1.0)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def on_moto(no_aws: None, moto_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("SWITCHYARD_EMAIL_FROM", "noreply@example.com")
    return moto_url


def test_s3_and_sqs_tools_reach_moto_server_through_aws_endpoint_url(on_moto: str) -> None:
    boto3.client("s3", region_name="eu-west-1").create_bucket(
        Bucket="docs", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    invoke("s3.put", {"bucket": "docs", "key": "a.txt", "body": "hello"})
    assert invoke("s3.get", {"bucket": "docs", "key": "a.txt"}) == {"body": "hello"}
    url = boto3.client("sqs", region_name="eu-west-1").create_queue(QueueName="jobs")["QueueUrl"]
    assert invoke("sqs.send", {"queue": "jobs", "message": {"job": 1}})["message_id"]
    messages = boto3.client("sqs", region_name="eu-west-1").receive_message(QueueUrl=url)[
        "Messages"
    ]
    assert json.loads(messages[0]["Body"]) == {"job": 1}


def test_sns_events_and_ses_tools_reach_moto_server(on_moto: str) -> None:
    boto3.client("sns", region_name="eu-west-1").create_topic(Name="alerts")
    assert invoke("sns.publish", {"topic": "alerts", "message": "hi"})["message_id"]
    out = invoke("events.put", {"source": "shop", "detail_type": "Done", "detail": {"id": 1}})
    assert out["event_id"]
    boto3.client("ses", region_name="eu-west-1").verify_email_identity(
        EmailAddress="noreply@example.com"
    )
    assert invoke("email.send", {"to": "c@example.com", "subject": "Hi", "body": "Hello"})[
        "message_id"
    ]
    sent = httpx.get(f"{on_moto}/moto-api/data.json").json()["ses"]
    assert sent  # moto recorded the message SES accepted


def test_a_service_specific_endpoint_wins(on_moto: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", on_moto)
    boto3.client("sqs", endpoint_url=on_moto, region_name="eu-west-1").create_queue(
        QueueName="only-sqs"
    )
    assert invoke("sqs.send", {"queue": "only-sqs", "message": "x"})["message_id"]
    with pytest.raises(TransientError, match="could not connect"):
        invoke("s3.get", {"bucket": "docs", "key": "a.txt"})


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("s3.get", {"bucket": "b", "key": "k"}),
        ("sqs.send", {"queue": "q", "message": "m"}),
        ("sns.publish", {"topic": "t", "message": "m"}),
        ("events.put", {"source": "s", "detail_type": "d", "detail": {}}),
        ("email.send", {"to": "a@example.com", "body": "b", "from": "n@example.com"}),
    ],
)
def test_with_no_region_a_tool_fails_permanent_naming_what_to_set(
    no_aws: None, tool: str, args: dict[str, Any]
) -> None:
    with pytest.raises(PermanentError) as info:
        invoke(tool, args)
    message = str(info.value)
    assert "AWS_REGION" in message and "AWS_ENDPOINT_URL" in message
    assert "NoRegionError" not in message
    if tool == "email.send":
        assert "SWITCHYARD_SMTP_URL" in message


def test_with_a_region_and_no_credentials_a_tool_says_so(
    no_aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(PermanentError, match="no AWS credentials"):
        invoke("sqs.send", {"queue": "https://sqs.eu-west-1.amazonaws.com/1/q", "message": "m"})


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Envelope] = []

    async def handle_RCPT(  # noqa: N802 - aiosmtpd's hook name
        self, server: SmtpProtocol, session: Session, envelope: Envelope, address: str, _: Any
    ) -> str:
        if address.endswith("@refused.example.com"):
            return "550 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(  # noqa: N802 - aiosmtpd's hook name
        self, server: SmtpProtocol, session: Session, envelope: Envelope
    ) -> str:
        self.messages.append(envelope)
        return "250 accepted"


@pytest.fixture
def smtp(no_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Inbox]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    monkeypatch.setenv("SWITCHYARD_SMTP_URL", f"smtp://127.0.0.1:{controller.port}")
    try:
        yield inbox
    finally:
        controller.stop()


def test_email_send_goes_through_the_smtp_server_without_any_aws_setting(smtp: Inbox) -> None:
    out = invoke(
        "email.send",
        {
            "to": ["a@example.com", "b@example.com"],
            "cc": "c@example.com",
            "subject": "Invoice\r\nBcc: evil@example.com",
            "body": "Hello",
            "html": "<p>Hello</p>",
            "from": "support@example.com",
        },
    )
    assert len(smtp.messages) == 1
    envelope = smtp.messages[0]
    assert sorted(envelope.rcpt_tos) == ["a@example.com", "b@example.com", "c@example.com"]
    assert isinstance(envelope.content, bytes)
    mail = message_from_bytes(envelope.content)
    assert mail["Subject"] == "Invoice Bcc: evil@example.com" and mail["Bcc"] is None
    assert mail["Message-ID"] == out["message_id"]
    again = invoke("email.send", {"to": "a@example.com", "body": "x", "from": "s@example.com"})
    assert again["message_id"] == out["message_id"]  # one Message-ID per idempotency key


def test_a_refused_recipient_is_permanent_and_no_server_is_transient(
    smtp: Inbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(PermanentError, match="refused"):
        invoke("email.send", {"to": "x@refused.example.com", "body": "b", "from": "s@e.com"})
    monkeypatch.setenv("SWITCHYARD_SMTP_URL", f"smtp://127.0.0.1:{free_port()}")
    with pytest.raises(TransientError, match="could not connect"):
        invoke("email.send", {"to": "a@example.com", "body": "b", "from": "s@e.com"})


def test_a_malformed_smtp_url_is_permanent_and_its_password_is_not_repeated(
    no_aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHYARD_SMTP_URL", "http://user:hunter2@mail")
    with pytest.raises(PermanentError) as info:
        invoke("email.send", {"to": "a@example.com", "body": "b", "from": "s@e.com"})
    assert "SWITCHYARD_SMTP_URL" in str(info.value) and "hunter2" not in str(info.value)


class Hooks:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        handler_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                handler_self.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T/B/X"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hooks() -> Iterator[Hooks]:
    server = Hooks()
    try:
        yield server
    finally:
        server.close()


def test_slack_post_reads_its_webhook_url_from_switchyard_secret(
    no_aws: None, hooks: Hooks, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHYARD_SECRET_SUPPORT_WEBHOOK", hooks.url)
    assert invoke("slack.post", {"webhook": "support-webhook", "text": "hello"}) == {"ok": True}
    assert hooks.bodies == [{"text": "hello"}]
    response = invoke("http.request", {"method": "POST", "url": hooks.url, "json": {"a": 1}})
    assert response["status"] == 200 and hooks.bodies[-1] == {"a": 1}


def test_slack_post_without_the_secret_names_the_variable_to_set(no_aws: None) -> None:
    with pytest.raises(PermanentError) as info:
        invoke("slack.post", {"webhook": "ops-alerts", "text": "hello"})
    assert "SWITCHYARD_SECRET_OPS_ALERTS" in str(info.value)
