"""approval_notify's work: the gate a person sees, recorded in the run database."""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from switchyard.constants import DATABASE_URL_ENV, LLM_SCRIPT_ENV
from switchyard.contract import GateKind, GateRequest, RunContext, StepContext, WorkflowInfo
from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.gates import Decision, GateStore, decide, open_gate
from switchyard.runtime import wiring
from switchyard.stores.tool_calls import PostgresDecisionStore
from tests.unit.runtime.helpers import invocation

FUNCTIONS = Path(__file__).resolve().parents[3] / "functions"


def approval(
    gate: dict[str, Any], *, inputs: dict[str, Any], steps: dict[str, Any] | None = None
) -> GateRequest:
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    return GateRequest(
        kind=GateKind.APPROVAL,
        step_id="approve",
        workflow=WorkflowInfo(name="support", version=1),
        context=StepContext(
            inputs=inputs,
            run=RunContext(
                id=run_id, workflow="support", version=1, started_at="2026-01-01T00:00:00Z"
            ),
            steps=steps or {},
        ),
        task_token=f"token-{uuid.uuid4().hex}",
        execution_arn=f"arn:aws:states:us-east-1:000000000000:execution:support:{run_id}",
        gate={"type": "human_gate", "assignee": "lead", **gate},
        assignee="lead",
        timeout_seconds=3600,
    )


def test_a_message_of_one_object_expression_reads_as_json(pg_pool: ConnectionPool) -> None:
    request = approval({"message": "{{ inputs.order }}"}, inputs={"order": {"id": "é", "ok": True}})
    gate = open_gate(request, GateStore(pg_pool))
    assert gate.message == '{"id": "é", "ok": true}'
    (stored,) = GateStore(pg_pool).open_for(request.context.run.id)
    assert stored.message == '{"id": "é", "ok": true}'


def handler_module(name: str) -> ModuleType:
    """`functions/<name>/handler.py`, loaded once per process under the name the engine's
    function registry gives it (Powertools configures a service's logger once per process)."""
    module_name = f"switchyard_functions.{name}.handler"
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(module_name, FUNCTIONS / name / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def functions_on_the_database(pg_conninfo: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The handlers build their services once per process: build them on the test database."""
    monkeypatch.setenv(DATABASE_URL_ENV, pg_conninfo)
    monkeypatch.delenv(LLM_SCRIPT_ENV, raising=False)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    def clear() -> None:
        wiring.step_services.cache_clear()
        wiring.database_pool.cache_clear()
        handler_module("approval_notify")._store.cache_clear()

    clear()
    yield
    clear()


CHARGES: list[dict[str, Any]] = []


def charge(order_id: str, amount: float, api_token: str) -> dict[str, Any]:
    CHARGES.append({"order_id": order_id, "amount": amount, "api_token": api_token})
    return {"charged": amount}


class RecordedCallbacks:
    """Step Functions' task-token API, as far as this test needs it: what was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def send_success(self, token: str, output: Any) -> None:
        self.sent.append((token, output))

    def send_failure(self, token: str, error: str, cause: str) -> None:
        self.sent.append((token, {"error": error, "cause": cause}))

    def stop(self, execution_arn: str, error: str, cause: str) -> None:
        raise AssertionError("not cancelled")


def test_a_tool_call_waiting_for_approval_shows_no_secret_and_runs_with_it_when_approved(
    functions_on_the_database: None,
    pg_pool: ConnectionPool,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret, task_token = "tok-live-4242", f"AQB-task-token-{uuid.uuid4().hex}"
    # Every log line is checked, whatever level an earlier test of this process gave the
    # functions' loggers (the REST API's tests run them at WARNING).
    for function in ("tool_step", "approval_notify"):
        caplog.set_level(logging.DEBUG, logger=f"switchyard.{function}")
    tool_defs = {
        "charge": {
            "description": "Charge an order.",
            "kind": "python",
            "config": {"function": "tests.unit.gates.test_notify:charge"},
            "input_schema": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount": {"type": "number"},
                    "api_token": {"type": "string"},
                },
                "required": ["order_id", "amount", "api_token"],
            },
            "side_effect": "idempotent",
            "policy": {"require_approval_if": "args.amount > 100"},
        }
    }
    step = {
        "type": "tool",
        "tool": "charge",
        "args": {"order_id": "A-17", "amount": 250, "api_token": secret},
        "tool_defs": tool_defs,
    }
    event = invocation("pay_back", step).model_dump(mode="json")
    run = event["context"]["run"]
    tool_step = handler_module("tool_step").handler
    with pytest.raises(Exception) as raised:
        tool_step(event, LambdaContext("tool_step", "arn:aws:lambda:::function:tool_step"))
    assert type(raised.value).__name__ == "human_required"

    # The machine's Catch hands the Lambda error to the gate, as Step Functions words it.
    lambda_error = {"errorMessage": str(raised.value), "errorType": "human_required"}
    gate_event = {
        "kind": "human",
        "step_id": "pay_back",
        "workflow": {"name": "support", "version": 1},
        "context": {"run": run},
        "task_token": task_token,
        "execution_arn": f"arn:aws:states:us-east-1:000000000000:execution:support:{run['id']}",
        "error": {"Error": "human_required", "Cause": json.dumps(lambda_error)},
    }
    notify = handler_module("approval_notify").handler
    opened = notify(gate_event, LambdaContext("approval_notify", "arn:aws:lambda:::function:n"))
    store = GateStore(pg_pool)
    gate = store.get(opened["gate_id"])
    assert gate is not None
    shown = json.dumps(gate.public())
    assert gate.request is not None
    assert gate.request["detail"]["args"] == {
        "order_id": "A-17",
        "amount": 250,
        "api_token": "***",
    }
    assert secret not in shown and task_token not in shown
    logs = capfd.readouterr()
    assert secret not in logs.out + logs.err and task_token not in logs.out + logs.err
    assert "gate open" in caplog.text and "tool_approval" in caplog.text
    assert secret not in caplog.text and task_token not in caplog.text

    # Approved with the amount lowered, the token left as shown: the call runs with the real one.
    callbacks = RecordedCallbacks()
    decide(
        gate,
        Decision(
            "approve", "lead@example.com", edits={**gate.request["detail"]["args"], "amount": 90}
        ),
        store=store,
        callbacks=callbacks,
        decisions=PostgresDecisionStore(pg_pool),
    )
    assert callbacks.sent == [
        (task_token, {"decision": "approved", "reviewer": "lead@example.com"})
    ]
    result = tool_step(event, LambdaContext("tool_step", "arn:aws:lambda:::function:tool_step"))
    assert result["output"] == {"charged": 90}
    assert CHARGES[-1] == {"order_id": "A-17", "amount": 90, "api_token": secret}
    logs = capfd.readouterr()
    assert secret not in logs.out + logs.err and task_token not in logs.out + logs.err
    assert secret not in caplog.text and task_token not in caplog.text


def test_a_gate_redacts_arguments_a_step_sent_in_clear(pg_pool: ConnectionPool) -> None:
    """Defence in depth: a machine compiled before redaction, or another producer."""
    cause = {"kind": "tool_approval", "reason": "r", "tool": "t", "args": {"password": "hunter2"}}
    request = approval({"message": "x"}, inputs={}).model_copy(
        update={
            "kind": GateKind.HUMAN,
            "gate": None,
            "error": {
                "Error": "human_required",
                "Cause": json.dumps({"errorMessage": json.dumps(cause)}),
            },
        }
    )
    gate = open_gate(request, GateStore(pg_pool))
    assert gate.request is not None and gate.request["detail"]["args"] == {"password": "***"}


def test_an_approval_shows_the_values_of_large_outputs(
    functions_on_the_database: None, pg_pool: ConnectionPool
) -> None:
    from switchyard.runtime.large_outputs import PostgresOutputStore, offload

    draft = "Dear customer, " + "é" * 40_000
    output = offload({"text": draft, "tone": "warm"}, PostgresOutputStore(pg_pool), "run/draft")
    assert output["text"] != draft  # stored aside, a reference in its place
    request = approval(
        {
            "message": "Send this reply ({{ steps.draft.output.text | length }} characters)?",
            "show": {
                "draft": "{{ steps.draft.output.text }}",
                "tone": "{{ steps.draft.output.tone }}",
            },
        },
        inputs={},
        steps={"draft": {"status": "completed", "output": output}},
    )
    notify = handler_module("approval_notify").handler
    opened = notify(
        request.model_dump(mode="json"), LambdaContext("approval_notify", "arn:aws:lambda:::n")
    )
    gate = GateStore(pg_pool).get(opened["gate_id"])
    assert gate is not None
    assert gate.message == f"Send this reply ({len(draft)} characters)?"
    assert gate.show == {"draft": draft, "tone": "warm"}


@pytest.mark.parametrize(
    ("written", "kind"),
    [("human_required", GateKind.HUMAN), ("budget", GateKind.BUDGET), ("human", GateKind.HUMAN)],
)
def test_a_gate_opened_from_a_catch_names_its_kind_by_the_error_it_caught(
    written: str, kind: GateKind
) -> None:
    """A block with one step has one gate for a refused budget and a person needed; it sends
    the caught error's name as the kind (compile/steps/failure.py)."""
    request = approval({"message": "m"}, inputs={}).model_dump(mode="json")
    assert GateRequest.model_validate({**request, "kind": written}).kind is kind


def test_a_gate_of_an_unknown_kind_is_refused() -> None:
    request = approval({"message": "m"}, inputs={}).model_dump(mode="json")
    with pytest.raises(ValueError, match="kind"):
        GateRequest.model_validate({**request, "kind": "rate_limit"})


@pytest.mark.parametrize("kind", [GateKind.PAUSE, GateKind.BUDGET, GateKind.HUMAN])
def test_a_gate_without_channels_of_its_own_goes_to_every_configured_channel(
    pg_pool: ConnectionPool, kind: GateKind
) -> None:
    """A paused run, a refused budget and a tool call to approve are the operators': they are
    told on each channel a notifier is configured for (here e-mail, not Slack)."""
    sent: list[str] = []
    cause = json.dumps({"type": "permanent", "message": "down"})
    request = approval({}, inputs={}).model_copy(
        update={
            "kind": kind,
            "gate": None,
            "assignee": None,
            "error": {"Error": "x", "Cause": cause},
        }
    )
    gate = open_gate(
        request, GateStore(pg_pool), notifiers={"email": lambda g: sent.append(g.id) or {}}
    )
    assert gate.channels == ["console", "email"]
    assert sent == [gate.id]
    assert [n["channel"] for n in gate.notified] == ["console", "email"]
    quiet = open_gate(request.model_copy(update={"step_id": "other"}), GateStore(pg_pool))
    assert quiet.channels == ["console"]  # nothing configured: no "not sent" records
