"""The tool gateway: allow-list, schema, policy, approvals, loop detection, audit."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from switchyard.contract import RunContext, StepErrorName
from switchyard.contract.step_errors import HumanRequiredError, PolicyViolationError, RejectedError
from switchyard.runtime.tools import (
    CallScope,
    GatewayStores,
    ToolEnvironment,
    ToolGateway,
    ToolRegistry,
    ToolRequest,
    call_id_for,
)
from switchyard.stores.audit import InMemoryAuditLog, PostgresAuditLog
from switchyard.stores.tool_calls import (
    InMemoryDecisionStore,
    InMemoryToolCallLedger,
    PostgresDecisionStore,
    PostgresToolCallLedger,
    ToolDecision,
)

REFUNDS: list[dict[str, Any]] = []


def refund(order_id: str, amount: float, api_key: str = "") -> dict[str, Any]:
    REFUNDS.append({"order_id": order_id, "amount": amount})
    return {"refunded": amount, "order_id": order_id}


def lookup(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "shipped"}


TOOL_DEFS: dict[str, Any] = {
    "refund": {
        "description": "Refund an order.",
        "kind": "python",
        "config": {"function": "tests.unit.runtime.tools.test_gateway:refund"},
        "input_schema": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "amount": {"type": "number"},
                "api_key": {"type": "string"},
            },
            "required": ["order_id", "amount"],
        },
        "side_effect": "idempotent",
        "policy": {"max_calls_per_run": 2, "require_approval_if": "args.amount > 100"},
    },
    "lookup": {
        "description": "Look up an order.",
        "kind": "python",
        "config": {"function": "tests.unit.runtime.tools.test_gateway:lookup"},
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "side_effect": "none",
    },
}


@pytest.fixture(params=["memory", "postgres"])
def stores(request: pytest.FixtureRequest) -> GatewayStores:
    if request.param == "memory":
        return GatewayStores(InMemoryAuditLog(), InMemoryToolCallLedger(), InMemoryDecisionStore())
    pool = request.getfixturevalue("pg_pool")
    return GatewayStores(
        PostgresAuditLog(pool), PostgresToolCallLedger(pool), PostgresDecisionStore(pool)
    )


def scope(allowed: set[str] | None = None, key: str | None = None) -> CallScope:
    run = RunContext(
        id=f"run-{uuid.uuid4().hex[:8]}",
        workflow="shop",
        version=1,
        started_at="2026-01-01T00:00:00Z",
    )
    return CallScope(
        run=run,
        step_id="agent",
        idempotency_key=key or f"{run.id}:agent",
        inputs={"tier": "pro"},
        allowed=frozenset(allowed) if allowed is not None else None,
    )


def gateway(stores: GatewayStores) -> ToolGateway:
    return ToolGateway(ToolRegistry(TOOL_DEFS), stores=stores, env=ToolEnvironment())


def test_a_listed_tool_runs_and_is_audited_with_secrets_redacted(stores: GatewayStores) -> None:
    s = scope({"refund"})
    out = gateway(stores).call(
        ToolRequest("refund", {"order_id": "A1", "amount": 20, "api_key": "sk-123"}, "0.0"), s
    )
    assert out == {"refunded": 20, "order_id": "A1"}
    [record] = stores.audit.for_run(s.run.id)
    assert (record.tool, record.outcome, record.step_id) == ("refund", "ok", "agent")
    assert record.arguments == {"order_id": "A1", "amount": 20, "api_key": "***"}
    assert record.duration_ms >= 0


def test_a_tool_outside_the_allow_list_is_refused_and_audited(stores: GatewayStores) -> None:
    s = scope({"lookup"})
    with pytest.raises(PolicyViolationError) as info:
        gateway(stores).call(ToolRequest("refund", {"order_id": "A1", "amount": 5}, "0.0"), s)
    assert info.value.name is StepErrorName.POLICY
    [record] = stores.audit.for_run(s.run.id)
    assert (record.outcome, record.error_type) == ("refused", "policy")


def test_arguments_must_match_the_input_schema(stores: GatewayStores) -> None:
    with pytest.raises(PolicyViolationError, match="input_schema"):
        gateway(stores).call(
            ToolRequest("refund", {"order_id": 7, "amount": 5}, "0.0"), scope({"refund"})
        )


def test_max_calls_per_run_counts_each_call_once(stores: GatewayStores) -> None:
    s, gw = scope({"refund"}), gateway(stores)
    first = ToolRequest("refund", {"order_id": "A", "amount": 1}, "0.0")
    gw.call(first, s)
    gw.call(first, s)  # the same call again (a retried attempt) is not a new call
    gw.call(ToolRequest("refund", {"order_id": "B", "amount": 1}, "1.0"), s)
    with pytest.raises(PolicyViolationError, match="2 times per run"):
        gw.call(ToolRequest("refund", {"order_id": "C", "amount": 1}, "2.0"), s)
    assert [r.outcome for r in stores.audit.for_run(s.run.id)] == ["ok", "ok", "ok", "refused"]


def test_approval_needed_then_runs_with_exactly_the_approved_arguments(
    stores: GatewayStores,
) -> None:
    s, gw = scope({"refund"}), gateway(stores)
    request = ToolRequest("refund", {"order_id": "A7", "amount": 250}, "0.0")
    before = len(REFUNDS)
    with pytest.raises(HumanRequiredError) as info:
        gw.call(request, s)
    human = info.value.request
    assert human.kind == "tool_approval" and human.tool == "refund"
    assert human.args == {"order_id": "A7", "amount": 250}
    assert human.call_id == call_id_for(s.idempotency_key, request)
    assert len(REFUNDS) == before

    stores.decisions.record(
        s.run.id,
        human.call_id,
        ToolDecision("approved", args={"order_id": "A7", "amount": 200}, reviewer="lead"),
    )
    assert gw.call(request, s) == {"refunded": 200, "order_id": "A7"}
    assert REFUNDS[-1] == {"order_id": "A7", "amount": 200}
    outcomes = [(r.outcome, r.arguments.get("amount")) for r in stores.audit.for_run(s.run.id)]
    assert outcomes == [("human_required", 250), ("ok", 200)]


def test_a_rejected_call_fails_rejected(stores: GatewayStores) -> None:
    s, gw = scope({"refund"}), gateway(stores)
    request = ToolRequest("refund", {"order_id": "A8", "amount": 500}, "0.0")
    stores.decisions.record(
        s.run.id, call_id_for(s.idempotency_key, request), ToolDecision("rejected", note="too much")
    )
    with pytest.raises(RejectedError, match="too much"):
        gw.call(request, s)


def test_the_same_call_three_times_in_a_run_stops_for_a_person(stores: GatewayStores) -> None:
    s, gw = scope({"lookup"}), gateway(stores)
    for turn in range(2):
        gw.call(ToolRequest("lookup", {"order_id": "Z"}, f"{turn}.0"), s)
    third = ToolRequest("lookup", {"order_id": "Z"}, "2.0")
    with pytest.raises(HumanRequiredError) as info:
        gw.call(third, s)
    assert info.value.request.kind == "loop"
    stores.decisions.record(s.run.id, info.value.request.call_id or "", ToolDecision("approved"))
    assert gw.call(third, s) == {"order_id": "Z", "status": "shipped"}
    # Different arguments are not a loop.
    gw.call(ToolRequest("lookup", {"order_id": "Y"}, "3.0"), s)


def test_an_unknown_tool_is_refused(stores: GatewayStores) -> None:
    with pytest.raises(PolicyViolationError, match="no tool named"):
        gateway(stores).call(ToolRequest("delete_everything", {}), scope())


KEYS_USED: list[str] = []


def charge(order_id: str, amount: float, api_key: str) -> dict[str, Any]:
    KEYS_USED.append(api_key)
    return {"charged": amount, "order_id": order_id}


CHARGE_DEFS: dict[str, Any] = {
    "charge": {
        **TOOL_DEFS["refund"],
        "config": {"function": "tests.unit.runtime.tools.test_gateway:charge"},
        "input_schema": {
            **TOOL_DEFS["refund"]["input_schema"],
            "required": ["order_id", "amount", "api_key"],
        },
    }
}


@pytest.mark.parametrize(
    ("approved_args", "runs_with"),
    [
        (None, {"order_id": "A9", "amount": 250, "api_key": "sk-live-123"}),
        (
            {"order_id": "A9", "amount": 180, "api_key": "***"},
            {"order_id": "A9", "amount": 180, "api_key": "sk-live-123"},
        ),
        (
            {"order_id": "A9", "amount": 180, "api_key": "sk-other"},
            {"order_id": "A9", "amount": 180, "api_key": "sk-other"},
        ),
    ],
)
def test_a_call_waiting_for_approval_shows_its_arguments_redacted_and_runs_with_the_real_ones(
    stores: GatewayStores, approved_args: dict[str, Any] | None, runs_with: dict[str, Any]
) -> None:
    s = scope({"charge"})
    gw = ToolGateway(ToolRegistry(CHARGE_DEFS), stores=stores, env=ToolEnvironment())
    request = ToolRequest("charge", {"order_id": "A9", "amount": 250, "api_key": "sk-live-123"})
    with pytest.raises(HumanRequiredError) as info:
        gw.call(request, s)
    human = info.value.request
    assert human.args == {"order_id": "A9", "amount": 250, "api_key": "***"}
    assert "sk-live-123" not in str(info.value.as_lambda_exception(attempt=1))

    # The person approves what they saw (possibly edited); the step renders the call again.
    stores.decisions.record(
        s.run.id, human.call_id or "", ToolDecision("approved", args=approved_args)
    )
    before = len(KEYS_USED)
    assert gw.call(request, s) == {"charged": runs_with["amount"], "order_id": "A9"}
    assert KEYS_USED[before:] == [runs_with["api_key"]]
    assert all("sk-" not in str(r.arguments) for r in stores.audit.for_run(s.run.id))


def test_a_database_failing_under_the_gateway_is_transient_and_audited(
    pg_conninfo: str,
) -> None:
    """The decisions store's pool is gone (PoolClosed, an OperationalError): the call leaves as
    `transient`, which the compiled Retry waits out, not as a tool bug's `permanent`."""
    from psycopg_pool import ConnectionPool

    closed = ConnectionPool(pg_conninfo, min_size=1, open=True)
    closed.close()
    audit = InMemoryAuditLog()
    stores = GatewayStores(audit, InMemoryToolCallLedger(), PostgresDecisionStore(closed))
    s = scope({"lookup"})
    with pytest.raises(Exception) as raised:
        gateway(stores).call(ToolRequest("lookup", {"order_id": "A1"}, "0.0"), s)
    assert getattr(raised.value, "name", None) == StepErrorName.TRANSIENT
    assert "the database failed (PoolClosed)" in str(raised.value)
    [record] = audit.for_run(s.run.id)
    assert record.outcome == "error"
