"""Circuit breakers in the tool gateway: a failing host or tool is refused fast, by every worker,
until a probe finds it recovered. A real HTTP server, real PostgreSQL stores."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract import RunContext
from switchyard.contract.step_errors import CircuitOpenError, PermanentError, TransientError
from switchyard.runtime.clock import ManualClock
from switchyard.runtime.tools import (
    CallScope,
    GatewayStores,
    ToolGateway,
    ToolRegistry,
    ToolRequest,
)
from switchyard.stores.audit import PostgresAuditLog
from switchyard.stores.breaker import PostgresBreakerStore
from switchyard.stores.tool_calls import PostgresDecisionStore, PostgresToolCallLedger
from tests.pg import fresh_database


class Downstream:
    """An HTTP server answering every request with `status`, counting what reaches it."""

    def __init__(self) -> None:
        self.status = 503
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests += 1
                self.send_response(owner.status)
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{port}/orders"
        self.circuit = f"host:127.0.0.1:{port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pool() -> Iterator[ConnectionPool]:
    """A database of the test's own (as a deployment has): no circuit of another test's."""
    with fresh_database() as conninfo, ConnectionPool(conninfo, min_size=1, max_size=4) as opened:
        yield opened


@pytest.fixture
def downstream() -> Iterator[Downstream]:
    server = Downstream()
    try:
        yield server
    finally:
        server.close()


FLAKY_CALLS: list[str] = []


def flaky(order_id: str) -> dict[str, Any]:
    FLAKY_CALLS.append(order_id)
    raise TransientError("the ledger service is down")


def lookup(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id}


TOOLS: dict[str, Any] = {
    name: {
        "description": name,
        "kind": "python",
        "config": {"function": f"tests.unit.runtime.tools.test_circuit_breakers:{name}"},
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "side_effect": "none",
    }
    for name in ("flaky", "lookup")
}


def worker(pool: ConnectionPool, clock: ManualClock) -> ToolGateway:
    """One worker's gateway: its own objects, the shared database."""
    stores = GatewayStores(
        PostgresAuditLog(pool),
        PostgresToolCallLedger(pool),
        PostgresDecisionStore(pool),
        breakers=PostgresBreakerStore(pool, clock=clock.now),
    )
    return ToolGateway(ToolRegistry(TOOLS), stores=stores)


def scope(workflow: str = "orders") -> CallScope:
    """A step of a run of its own (the calls come from many runs)."""
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    run = RunContext(id=run_id, workflow=workflow, version=1, started_at="2026-01-01T00:00:00Z")
    return CallScope(run=run, step_id="fetch", idempotency_key=f"{run_id}:fetch")


def get(gateway: ToolGateway, url: str) -> Any:
    return gateway.call(ToolRequest("http.request", {"method": "GET", "url": url}), scope())


def test_a_failing_host_is_refused_fast_by_every_worker_until_a_probe_finds_it_back(
    pool: ConnectionPool, downstream: Downstream
) -> None:
    clock = ManualClock()
    workers = [worker(pool, clock), worker(pool, clock)]
    for n in range(5):  # the host fails five calls in a row, from both workers
        with pytest.raises(TransientError, match="answered 503"):
            get(workers[n % 2], downstream.url)
    assert downstream.requests == 5

    for gateway in workers:  # open: neither worker calls it
        with pytest.raises(CircuitOpenError) as info:
            get(gateway, downstream.url)
        assert info.value.circuit == downstream.circuit
        assert "5 of its last 5 calls failed" in info.value.message
    assert downstream.requests == 5

    clock.advance(30)  # half-open: one probe goes through; the host has recovered
    downstream.status = 200
    assert get(workers[0], downstream.url)["status"] == 200
    assert get(workers[1], downstream.url)["status"] == 200  # closed again
    assert downstream.requests == 7


def test_a_failed_probe_keeps_the_host_resting(
    pool: ConnectionPool, downstream: Downstream
) -> None:
    clock = ManualClock()
    gateway = worker(pool, clock)
    for _ in range(5):
        with pytest.raises(TransientError):
            get(gateway, downstream.url)
    clock.advance(30)
    with pytest.raises(TransientError):  # the probe: still down
        get(gateway, downstream.url)
    with pytest.raises(CircuitOpenError, match="its probe call failed"):
        get(gateway, downstream.url)
    assert downstream.requests == 6


def test_answers_even_4xx_keep_a_circuit_closed(
    pool: ConnectionPool, downstream: Downstream
) -> None:
    downstream.status = 404
    gateway = worker(pool, ManualClock())
    for _ in range(8):
        with pytest.raises(PermanentError, match="answered 404"):
            get(gateway, downstream.url)
    assert downstream.requests == 8


def test_a_declared_tool_has_a_circuit_of_its_own(pool: ConnectionPool) -> None:
    gateway = worker(pool, ManualClock())
    workflow = f"wf-{uuid.uuid4().hex[:6]}"
    FLAKY_CALLS.clear()
    for n in range(5):
        with pytest.raises(TransientError):
            gateway.call(ToolRequest("flaky", {"order_id": str(n)}), scope(workflow))
    with pytest.raises(CircuitOpenError) as info:
        gateway.call(ToolRequest("flaky", {"order_id": "5"}), scope(workflow))
    assert info.value.circuit == f"tool:{workflow}/flaky"
    assert FLAKY_CALLS == ["0", "1", "2", "3", "4"]
    # Another tool, and the same tool of another workflow, are not affected.
    assert gateway.call(ToolRequest("lookup", {"order_id": "6"}), scope(workflow))
    with pytest.raises(TransientError):
        gateway.call(ToolRequest("flaky", {"order_id": "7"}), scope("other"))


def test_a_refused_call_is_audited_as_circuit_open(
    pool: ConnectionPool, downstream: Downstream
) -> None:
    gateway = worker(pool, ManualClock())
    for _ in range(5):
        with pytest.raises(TransientError):
            get(gateway, downstream.url)
    refused_scope = scope()
    with pytest.raises(CircuitOpenError):
        gateway.call(
            ToolRequest("http.request", {"method": "GET", "url": downstream.url}), refused_scope
        )
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT outcome, error_type, message FROM tool_audit WHERE run_id = %s",
            (refused_scope.run.id,),
        ).fetchone()
    assert row is not None
    assert row[:2] == ("error", "circuit_open")
    assert f"circuit {downstream.circuit} is open" in row[2]
