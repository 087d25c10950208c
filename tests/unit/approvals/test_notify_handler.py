"""approval_notify with approvals configured badly: the gate still opens (people find it through
the CLI and `GET /approvals`), and the channels say they were not sent; a reset run's gate that
cannot answer its own token opens too."""

from __future__ import annotations

import socket

import pytest
from psycopg_pool import ConnectionPool

from switchyard.constants import IDEMPOTENCY_TABLE_ENV, ROLES_ENV
from switchyard.contract import ResetFrom
from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.gates import GateStore
from tests.unit.gates.test_notify import approval, functions_on_the_database, handler_module
from tests.unit.runtime.test_replay import recorded_run

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


def closed_port() -> int:
    """A local port where nothing listens (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_replayed_gate_that_cannot_answer_its_token_opens_for_a_person(
    functions_on_the_database: None, pg_pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reset run's gate replays the recorded decision by answering its own task token; when
    the answer cannot reach Step Functions (here an endpoint where nothing listens), the gate
    opens as it would without a reset."""
    original = recorded_run(pg_pool)
    request = approval({"message": "go?"}, inputs={})
    reset = ResetFrom(run=original, to="send", reuse={"approve": original})
    run = request.context.run.model_copy(update={"reset": reset})
    request = request.model_copy(
        update={"context": request.context.model_copy(update={"run": run})}
    )
    monkeypatch.setenv(IDEMPOTENCY_TABLE_ENV, "idempotency")  # on AWS: Step Functions answers
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SFN", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    notify = handler_module("approval_notify").handler
    opened = notify(
        request.model_dump(mode="json"), LambdaContext("approval_notify", "arn:aws:lambda:::n")
    )
    gate = GateStore(pg_pool).get(opened["gate_id"])
    assert gate is not None and gate.status.value == "open"
