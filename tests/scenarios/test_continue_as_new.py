"""Continue-as-new on moto's Step Functions interpreter and on switchyard's engine: a loop that
hands its run on to a new execution every `after` iterations runs in segments, each segment's
summary reaching the next as `previous`, and both interpreters agree on every segment."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from switchyard.contract import StepInvocation, continued_to
from switchyard.engine.commands import StartExecution
from switchyard.local.stack import local_engine
from switchyard.model import Workflow
from switchyard.source import load_document
from switchyard.validate import validate_document
from tests.scenarios.harness.engine_runner import install, scripted_registry
from tests.scenarios.harness.moto_runner import create_machines, moto_step_functions
from tests.scenarios.harness.scenario import Scenario
from tests.scenarios.harness.scripted import ScriptedFunctions

WORKFLOW = """
switchyard: 1
name: refine-long
version: 1
defaults: {model: claude-haiku-4-5}
inputs: {topic: {type: string}}
steps:
  prep: {type: agent, prompt: "prepare {{ inputs.topic }}"}
  refine:
    type: loop
    after: [prep]
    max_iterations: 9
    until: output.score >= 0.8
    continue_as_new:
      after: 2
      summary: {score: "{{ previous.score }}", carried_at: "{{ iteration }}"}
    step:
      type: agent
      prompt: "refine {{ previous }}"
      output_schema: {type: object, properties: {score: {type: number}}, required: [score]}
  publish: {type: agent, after: [refine], prompt: "publish {{ steps.prep.output.text }}"}
outputs:
  score: "{{ steps.refine.output.score }}"
  iterations: "{{ steps.refine.output.iterations }}"
  prep: "{{ steps.prep.output.text }}"
"""
SCORES = [0.1, 0.2, 0.3, 0.4, 0.9]
"""One per iteration: `until` holds at the fifth, in the third segment (2 + 2 + 1)."""


@dataclass
class Seen(ScriptedFunctions):
    """The scripted functions, remembering what each loop iteration saw as `previous`."""

    previous: dict[int, Any] = field(default_factory=dict)

    def invoke(self, function: str, payload: dict[str, Any]) -> Any:
        if function == "agent_step":
            scope = StepInvocation.model_validate(payload).context.scope or {}
            if "iteration" in scope:
                self.previous[int(scope["iteration"])] = scope.get("previous")
        return super().invoke(function, payload)


@dataclass
class Segments:
    statuses: list[str]
    outputs: list[Any]
    names: list[str]
    previous: dict[int, Any]
    calls: dict[str, int]


def _workflow() -> Workflow:
    result = validate_document(load_document(WORKFLOW, file="refine-long.yaml"))
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return result.workflow


def _scenario() -> Scenario:
    return Scenario(
        name="continue-as-new",
        description="",
        workflow=_workflow(),
        children=[],
        input={"topic": "anvils"},
        script={
            "prep": [{"text": "notes"}],
            "refine": [{"output": {"score": s}} for s in SCORES],
            "publish": [{"text": "done"}],
        },
        gates={},
        expect={},
    )


def _functions(scenario: Scenario) -> Seen:
    return Seen(scenario.script)


Chain = tuple[list[str], list[Any], list[str]]
"""The segments of a run, in order: their statuses, outputs and execution names."""


def chain_on_moto(functions: ScriptedFunctions, scenario: Scenario, name: str) -> Chain:
    """Run the scenario on moto as execution `name`, following it from segment to segment."""
    statuses, outputs, names = [], [], []
    with moto_step_functions(functions) as sfn:
        arn = create_machines(sfn, [], scenario.workflow)
        execution = sfn.start_execution(
            stateMachineArn=arn, name=name, input=json.dumps(scenario.input)
        )["executionArn"]
        while execution:
            described = _moto_end(sfn, execution)
            output = json.loads(described["output"]) if described.get("output") else None
            statuses.append(described["status"])
            outputs.append(output)
            names.append(described["name"])
            handed = continued_to(output)
            execution = handed["execution_arn"] if handed else ""
    return statuses, outputs, names


def chain_on_engine(
    conninfo: str, functions: ScriptedFunctions, scenario: Scenario, name: str
) -> Chain:
    """Run the scenario on the local engine as execution `name`, segment to segment."""
    engine = local_engine(conninfo, registry=scripted_registry(functions))
    engine.start()
    statuses, outputs, names = [], [], []
    try:
        arn = install(engine, scenario, name)
        execution = engine.submit(StartExecution(arn, name, scenario.input))["executionArn"]
        while execution:
            status = engine.wait(execution, timeout=60)
            with engine.read() as store:
                row = store.execution_row(arn=execution)
            assert row is not None
            statuses.append(status)
            outputs.append(row.output)
            names.append(row.name)
            handed = continued_to(row.output)
            execution = handed["execution_arn"] if handed else ""
    finally:
        engine.close()
    return statuses, outputs, names


def run_on_moto(scenario: Scenario) -> Segments:
    functions = _functions(scenario)
    chain = chain_on_moto(functions, scenario, "run-can")
    return Segments(*chain, functions.previous, dict(functions.calls))


def _moto_end(sfn: Any, execution: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return dict(described)
        time.sleep(0.02)
    raise TimeoutError(execution)


def run_on_engine(conninfo: str, scenario: Scenario) -> Segments:
    functions = _functions(scenario)
    chain = chain_on_engine(conninfo, functions, scenario, "run-can")
    return Segments(*chain, functions.previous, dict(functions.calls))


def _check(segments: Segments) -> None:
    assert segments.statuses == ["SUCCEEDED"] * 3
    assert segments.names == ["run-can", "run-can-2", "run-can-3"]
    assert segments.outputs[0] == {
        "switchyard:continued": {
            "run_id": "run-can",
            "segment": 2,
            "execution_arn": segments.outputs[0]["switchyard:continued"]["execution_arn"],
        }
    }
    assert segments.outputs[-1] == {"score": 0.9, "iterations": 5, "prep": "notes"}
    # each iteration once, prep and publish once: nothing before the loop ran again
    assert segments.calls == {"prep": 1, "refine": 5, "publish": 1}
    # inside a segment `previous` is the last output; across segments, the rendered summary
    assert segments.previous == {
        1: None,
        2: {"score": 0.1},
        3: {"score": 0.2, "carried_at": 3},
        4: {"score": 0.3},
        5: {"score": 0.4, "carried_at": 5},
    }


def test_a_loop_continues_as_new_on_moto_and_on_the_engine(pg_conninfo: str) -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    scenario = _scenario()
    on_moto = run_on_moto(scenario)
    _check(on_moto)
    on_engine = run_on_engine(pg_conninfo, scenario)
    _check(on_engine)
    assert on_engine.outputs[-1] == on_moto.outputs[-1]
    assert [o.get("switchyard:continued", {}).get("segment") for o in on_engine.outputs] == [
        o.get("switchyard:continued", {}).get("segment") for o in on_moto.outputs
    ]
