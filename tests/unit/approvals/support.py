"""The approval test bed, every part real: an engine on PostgreSQL running the real
approval_notify, an SMTP server (aiosmtpd), a stand-in for Slack's Web API (an HTTP server that
records calls and answers like Slack), and the approval routes in a FastAPI app served by uvicorn
on 127.0.0.1."""

from __future__ import annotations

import email
import email.policy
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from aiosmtpd.controller import Controller
from fastapi import FastAPI
from psycopg_pool import ConnectionPool

from switchyard.approvals import ApprovalSettings, build_approvals_router
from switchyard.constants import (
    PUBLIC_URL_ENV,
    ROLES_ENV,
    SLACK_API_URL_ENV,
    SLACK_BOT_TOKEN_ENV,
    SLACK_SIGNING_SECRET_ENV,
    SMTP_URL_ENV,
)
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.local.engine_client import EngineCommands
from switchyard.local.stack import local_engine
from switchyard.local.workflows import install
from tests.unit.api.support import handler_environment

LINK = re.compile(r"https?://[^\s\"'<>]+/approvals/[A-Za-z0-9_.-]+")
SLACK_SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_BOT_TOKEN = "xoxb-test-bot-token"
PEOPLE = {
    "lead": [
        {"name": "dana", "email": "dana@example.com", "slack": "U024BE7LH"},
        {"name": "lee", "email": "lee@example.com", "slack": "U0LEE0001"},
    ],
    "manager": [{"name": "max", "email": "max@example.com", "slack": "U0MAX0001"}],
    "operators": ["olga"],
}

GATED = """\
switchyard: 1
name: refund
version: 1
inputs:
  amount: {type: number}
  customer: {type: string}
steps:
  approve:
    type: human_gate
    assignee: lead
    message: "Refund {{ inputs.amount }} to {{ inputs.customer }}?"
    show: {amount: "{{ inputs.amount }}", customer: "{{ inputs.customer }}"}
    allow_edit: true
    channels: [email, slack]
    timeout: 1h
    escalation: [{assignee: manager, timeout: 1h}]
    on_timeout: approve
"""


class Clock:
    """The engine's and the routes' time: real until a test moves it."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


class Mailbox:
    """aiosmtpd's handler: every message delivered, parsed."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.arrived:
            self.messages.append(message)
            self.arrived.notify_all()
        return "250 OK"

    def wait_for(self, count: int, timeout: float = 20.0) -> list[EmailMessage]:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.messages) >= count, timeout):
                raise AssertionError(f"{len(self.messages)} message(s) arrived, not {count}")
            return list(self.messages)

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


@dataclass
class FakeSlack:
    """Slack's Web API as far as approvals use it: chat.postMessage and chat.update."""

    calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        slack = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                method = self.path.rsplit("/", 1)[-1]
                with slack.lock:
                    slack.calls.append((method, body, self.headers.get("Authorization", "")))
                    number = len(slack.calls)
                if self.headers.get("Authorization") != f"Bearer {SLACK_BOT_TOKEN}":
                    answer: dict[str, Any] = {"ok": False, "error": "invalid_auth"}
                else:
                    channel = "D" + str(body.get("channel", ""))[1:]
                    answer = {"ok": True, "channel": channel, "ts": f"1700000000.{number:06d}"}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def of(self, method: str) -> list[dict[str, Any]]:
        with self.lock:
            return [body for m, body, _ in self.calls if m == method]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def uvicorn_serving(app: FastAPI) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@dataclass
class Bed:
    engine: Engine
    url: str
    pool: ConnectionPool
    mailbox: Mailbox
    slack: FakeSlack
    clock: Clock
    """The engine's time (gate timeouts)."""
    link_clock: Clock
    """The routes' time (link expiry), apart from the engine's so that expiring a link does not
    fire the gate's timeout."""
    workflows: Path
    settings: ApprovalSettings

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, follow_redirects=False)

    def start(
        self,
        workflow: str,
        data: dict[str, Any],
        name: str,
        *,
        script: dict[str, list[dict[str, Any]]] | None = None,
    ) -> str:
        """Start a run; `script`: what its agent steps answer (no model is called)."""
        with self.engine.read() as store:
            installed = install(store, self.engine.arns, self.workflows / f"{workflow}.yaml")
        options = {"llm_script": script} if script is not None else {}
        started = self.engine.submit(StartExecution(installed.machine_arn, name, data, options))
        return str(started["executionArn"])

    def status(self, arn: str, timeout: float = 20.0) -> str:
        return self.engine.wait(arn, timeout=timeout)

    def gate_rows(self, run_id: str) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            cursor = conn.execute(
                "SELECT tier, status, decision, reviewer, note FROM gates WHERE run_id = %s"
                " ORDER BY created_at",
                (run_id,),
            )
            names = [c.name for c in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def wait_rows(
        self, run_id: str, ready: Callable[[list[dict[str, Any]]], bool], timeout: float = 20.0
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            rows = self.gate_rows(run_id)
            if ready(rows) or time.monotonic() > deadline:
                return rows
            time.sleep(0.02)


@contextmanager
def approval_bed(
    conninfo: str, root: Path, *, smtp: bool = True, people: dict[str, Any] | None = None
) -> Iterator[Bed]:
    workflows = root / "workflows"
    workflows.mkdir(exist_ok=True)
    (workflows / "refund.yaml").write_text(GATED)
    mailbox, slack, clock, link_clock = Mailbox(), FakeSlack(), Clock(), Clock()
    smtp_port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=smtp_port)
    controller.start()
    slack_server = ThreadingHTTPServer(("127.0.0.1", 0), slack.handler())
    threading.Thread(target=slack_server.serve_forever, daemon=True).start()
    pool = ConnectionPool(conninfo, min_size=1, max_size=8, open=True, kwargs={"autocommit": True})
    app = FastAPI()
    public = {"url": ""}
    try:
        with pytest.MonkeyPatch.context() as patch, handler_environment(conninfo):
            patch.setenv(ROLES_ENV, json.dumps(PEOPLE if people is None else people))
            if smtp:
                patch.setenv(SMTP_URL_ENV, f"smtp://127.0.0.1:{smtp_port}")
            else:
                patch.delenv(SMTP_URL_ENV, raising=False)
            patch.setenv(SLACK_BOT_TOKEN_ENV, SLACK_BOT_TOKEN)
            patch.setenv(SLACK_SIGNING_SECRET_ENV, SLACK_SIGNING_SECRET)
            patch.setenv(SLACK_API_URL_ENV, f"http://127.0.0.1:{slack_server.server_port}")
            engine = local_engine(conninfo, registry=FunctionRegistry(), workers=4, clock=clock)
            engine.start()
            try:
                with uvicorn_serving(app) as url:
                    public["url"] = url
                    patch.setenv(PUBLIC_URL_ENV, url)
                    settings = ApprovalSettings.from_env(pool)
                    app.include_router(
                        build_approvals_router(
                            pool, EngineCommands(engine), settings=settings, clock=link_clock
                        )
                    )
                    yield Bed(
                        engine, url, pool, mailbox, slack, clock, link_clock, workflows, settings
                    )
            finally:
                engine.close()
    finally:
        pool.close()
        slack_server.shutdown()
        slack_server.server_close()
        controller.stop()
