"""functions/migrate: the custom resource applies the migrations and answers CloudFormation."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import ModuleType
from typing import Any

import psycopg
import pytest

from switchyard.constants import DATABASE_URL_ENV
from switchyard.stores.migrate import migrations
from tests.infra.synth import REPO
from tests.pg import fresh_database


def _handler_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "migrate_handler", REPO / "functions" / "migrate" / "handler.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cloudformation() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A stand-in for CloudFormation's pre-signed response URL, on the loopback interface."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            length = int(self.headers["content-length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/response", received
    finally:
        server.shutdown()


class _Context:
    function_name = "migrate"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:migrate"
    aws_request_id = "req-1"


def _event(url: str, request_type: str) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Switchyard/x",
        "RequestId": "r-1",
        "LogicalResourceId": "SchemaMigrations",
        "ResourceProperties": {"MigrationsHash": "abc"},
    }


def test_create_applies_every_migration_and_reports_success(
    cloudformation: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = cloudformation
    handler = _handler_module()
    with fresh_database(migrate=False) as conninfo:
        monkeypatch.setenv(DATABASE_URL_ENV, conninfo)
        handler.handler(_event(url, "Create"), _Context())
        handler.handler(_event(url, "Update"), _Context())  # again: nothing left to apply
        with psycopg.connect(conninfo) as conn:
            applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(applied) == [m.version for m in migrations()]
    assert [r["Status"] for r in received] == ["SUCCESS", "SUCCESS"]
    assert received[0]["Data"]["Applied"] == ",".join(str(m.version) for m in migrations())
    assert received[1]["Data"]["Applied"] == ""
    assert received[0]["LogicalResourceId"] == "SchemaMigrations"


def test_a_failure_is_reported_as_failed_not_left_hanging(
    cloudformation: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = cloudformation
    monkeypatch.setenv(DATABASE_URL_ENV, "host=127.0.0.1 port=1 user=nobody connect_timeout=1")
    _handler_module().handler(_event(url, "Create"), _Context())
    assert received[0]["Status"] == "FAILED"
    assert received[0]["Reason"].startswith("migrations failed")


def test_delete_leaves_the_data(
    cloudformation: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = cloudformation
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    _handler_module().handler(_event(url, "Delete"), _Context())
    assert received[0]["Status"] == "SUCCESS"
