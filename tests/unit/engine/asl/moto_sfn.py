"""Run tiny state machines on moto's Step Functions interpreter, the independent reference.

One `MotoStepFunctions` per test module (a module-scoped fixture keeps one `mock_aws` context);
`run_all` starts every execution first and then polls them together, so a batch of cases costs
about as much as its slowest execution.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from switchyard.engine.asl import AslFailure, parse_definition
from switchyard.engine.asl import states as st
from switchyard.engine.asl.choice_rules import choose
from switchyard.engine.asl.result_path import (
    apply_input_path,
    apply_output_path,
    apply_result_path,
)

ROLE_ARN = "arn:aws:iam::123456789012:role/test"
REGION = "us-east-1"
_POLL_SECONDS = 0.002
_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class Outcome:
    """How an execution (or our evaluation of the same machine) ended."""

    status: str
    output: Any = None
    error: str | None = None
    cause: str | None = None

    @classmethod
    def succeeded(cls, output: Any) -> Outcome:
        return cls("SUCCEEDED", output)

    @classmethod
    def failed(cls, error: str, cause: str | None = None) -> Outcome:
        return cls("FAILED", None, error, cause)

    def same_result(self, other: Outcome) -> bool:
        """Same status and output, or same status and error name (causes are worded freely)."""
        if self.status != other.status:
            return False
        if self.status == "SUCCEEDED":
            return bool(self.output == other.output)
        return self.error == other.error


class MotoStepFunctions:
    def __init__(self) -> None:
        self.client = boto3.client("stepfunctions", region_name=REGION)
        self._names = itertools.count()

    def run(self, definition: dict[str, Any], data: Any) -> Outcome:
        return self.run_all([(definition, data)])[0]

    def run_all(self, cases: Sequence[tuple[dict[str, Any], Any]]) -> list[Outcome]:
        arns = []
        for definition, data in cases:
            number = next(self._names)
            machine = self.client.create_state_machine(
                name=f"m{number}", definition=json.dumps(definition), roleArn=ROLE_ARN
            )["stateMachineArn"]
            arns.append(
                self.client.start_execution(
                    stateMachineArn=machine, name=f"e{number}", input=json.dumps(data)
                )["executionArn"]
            )
        return [self._wait(arn) for arn in arns]

    def _wait(self, arn: str) -> Outcome:
        deadline = time.monotonic() + _TIMEOUT_SECONDS
        while True:
            found = self.client.describe_execution(executionArn=arn)
            if found["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"moto execution {arn} still RUNNING")
            time.sleep(_POLL_SECONDS)
        if found["status"] == "SUCCEEDED":
            return Outcome.succeeded(json.loads(found.get("output") or "null"))
        return Outcome(found["status"], None, found.get("error"), found.get("cause"))


@pytest.fixture(scope="module")
def moto_sfn() -> Iterator[MotoStepFunctions]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):  # type: ignore[arg-type]
        yield MotoStepFunctions()


# -- the same tiny machines, evaluated with our primitives ---------------------------------------


def pass_machine(state: dict[str, Any]) -> dict[str, Any]:
    """A one-state machine around a Pass state (`End` is added)."""
    return {"StartAt": "P", "States": {"P": {"Type": "Pass", **state, "End": True}}}


def parameters_machine(parameters: dict[str, Any]) -> dict[str, Any]:
    return pass_machine({"Parameters": parameters})


def choice_machine(rule: dict[str, Any], *, default: bool = True) -> dict[str, Any]:
    """A Choice whose only rule leads to `{"branch": "matched"}`, else `{"branch": "default"}`."""
    choice: dict[str, Any] = {"Type": "Choice", "Choices": [{**rule, "Next": "Yes"}]}
    states: dict[str, Any] = {
        "C": choice,
        "Yes": {"Type": "Pass", "Result": {"branch": "matched"}, "End": True},
    }
    if default:
        choice["Default"] = "No"
        states["No"] = {"Type": "Pass", "Result": {"branch": "default"}, "End": True}
    return {"StartAt": "C", "States": states}


def evaluate_locally(definition: dict[str, Any], data: Any, context: Any = None) -> Outcome:
    """Run a machine made only of Pass and Choice states with the primitives under test."""
    machine = parse_definition(definition)
    name: str | None = machine.start_at
    try:
        while name is not None:
            state = machine[name]
            effective = apply_input_path(state.input_path, data)
            if isinstance(state, st.Pass):
                if state.has_result:
                    result = state.result
                elif state.parameters is not None:
                    result = state.parameters.evaluate(effective, context or {})
                else:
                    result = effective
                data = apply_output_path(
                    state.output_path, apply_result_path(state.result_path, data, result)
                )
                name = state.next
            elif isinstance(state, st.Choice):
                name = choose(state.choices, state.default, effective, context or {})
                data = apply_output_path(state.output_path, effective)
            else:
                raise NotImplementedError(state.type)
    except AslFailure as failure:
        return Outcome.failed(failure.error, failure.cause)
    return Outcome.succeeded(data)
