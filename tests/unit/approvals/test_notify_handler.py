"""approval_notify with approvals configured badly: the gate still opens (people find it through
the CLI and `GET /approvals`), and the channels say they were not sent."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool

from switchyard.constants import ROLES_ENV
from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.gates import GateStore
from tests.unit.gates.test_notify import approval, functions_on_the_database, handler_module

__all__ = ["functions_on_the_database"]


def test_a_gate_opens_when_the_people_cannot_be_read(
    functions_on_the_database: None, pg_pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROLES_ENV, '{"lead": [{"email": "no-name@example.com"}]}')
    handler_module("approval_notify")._store.cache_clear()
    request = approval({"message": "go?", "channels": ["email", "slack"]}, inputs={})
    notify = handler_module("approval_notify").handler
    opened = notify(
        request.model_dump(mode="json"), LambdaContext("approval_notify", "arn:aws:lambda:::n")
    )
    gate = GateStore(pg_pool).get(opened["gate_id"])
    assert gate is not None and gate.status.value == "open"
    assert [(n["channel"], n["sent"]) for n in gate.notified] == [
        ("email", False),
        ("slack", False),
    ]
