"""Run a scenario on switchyard's own engine, on a real PostgreSQL database.

The same scripted step functions as on moto play the script; run_start and render are the real
handlers from `functions/`. Gates are decided through the engine's task-token API."""

from __future__ import annotations

import json
import time
from typing import Any

from switchyard.compile import compile_workflow
from switchyard.contract import GateKind
from switchyard.engine import machines
from switchyard.engine.commands import Callback, StartExecution, StopExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.engine.store import HistoryRow
from switchyard.engine.substitution import local_values, substitute
from tests.scenarios.harness.moto_runner import (
    DEADLINE_SECONDS,
    decision_output,
    tool_call_answer,
)
from tests.scenarios.harness.outcome import STATUS, Outcome, records_from_history
from tests.scenarios.harness.scenario import Scenario
from tests.scenarios.harness.scripted import OpenGate, ScriptedFunctions


def scripted_registry(functions: ScriptedFunctions) -> FunctionRegistry:
    """agent, tool, router and approval functions play the script; the rest are the real ones."""
    registry = FunctionRegistry()
    for name in ("agent_step", "tool_step", "router_step", "approval_notify"):
        registry.register(name, lambda event, context, n=name: functions.invoke(n, event))
    return registry


def install(engine: Engine, scenario: Scenario, prefix: str) -> str:
    """Create the scenario's machines (children first) in the engine; the parent's ARN."""
    known: list[tuple[str, str]] = []
    arn = ""
    with engine.read() as store:
        for workflow in [*scenario.children, scenario.workflow]:
            name = f"{prefix}-{workflow.name}"
            text, missing = substitute(
                compile_workflow(workflow).text, local_values(engine.arns, known)
            )
            assert not missing, missing
            arn = machines.create(store, engine.arns, name=name, definition=text)["stateMachineArn"]
            known.append((workflow.name, arn))
    return arn


def run_on_engine(
    engine: Engine, scenario: Scenario, functions: ScriptedFunctions, prefix: str
) -> Outcome:
    arn = install(engine, scenario, prefix)
    started = engine.submit(StartExecution(arn, f"run-{scenario.name}", scenario.input))
    execution = started["executionArn"]
    status = _drive(engine, execution, functions, scenario)
    with engine.read() as store:
        row = store.execution_row(arn=execution)
        assert row is not None
        events = [
            _as_event(e) for e in store.history(row.id, after=0, limit=100_000, reverse=False)
        ]
        letters = [json.loads(d.body) for d in store.dead_letters() if d.execution_id == row.id]
    steps, entered = records_from_history(events)
    return Outcome(
        status=STATUS[status],
        output=row.output,
        error=row.error,
        cause=row.cause,
        steps=steps,
        calls=dict(functions.calls),
        states_entered=entered,
        dead_letters=[letter["step_id"] for letter in letters],
        letters=letters,
    )


def _as_event(row: HistoryRow) -> dict[str, Any]:
    return {"id": row.event_id, "type": row.type, **row.details}


def _drive(engine: Engine, execution: str, functions: ScriptedFunctions, scenario: Scenario) -> str:
    actions = {step_id: list(entries) for step_id, entries in scenario.gates.items()}
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        for gate in list(functions.gates):
            if not gate.handled:
                gate.handled = True
                _decide(engine, execution, gate, actions)
        status = engine.wait(execution, timeout=0.02)
        if status != "RUNNING":
            return status
    raise TimeoutError(f"scenario {scenario.name} did not finish in {DEADLINE_SECONDS} s")


def _decide(
    engine: Engine, execution: str, gate: OpenGate, actions: dict[str, list[dict[str, Any]]]
) -> None:
    queue = actions.get(gate.request.step_id) or []
    if not queue:
        raise AssertionError(f"gate at {gate.request.step_id} opened without an action")
    action = queue.pop(0)
    kind = action["action"]
    if gate.request.kind is GateKind.HUMAN and kind in ("approve", "reject"):
        engine.submit(Callback(gate.token, "success", output=tool_call_answer(action)))
    elif kind == "approve":
        engine.submit(Callback(gate.token, "success", output=decision_output(gate, action)))
    elif kind == "reject":
        cause = {
            "reviewer": action.get("reviewer", "reviewer@example.com"),
            "note": action.get("note"),
        }
        engine.submit(Callback(gate.token, "failure", error="rejected", cause=json.dumps(cause)))
    elif kind == "resume":
        engine.submit(Callback(gate.token, "success", output={"resumed": True}))
    elif kind == "cancel":
        engine.submit(
            StopExecution(execution, error="cancelled", cause="cancelled by the scenario")
        )
