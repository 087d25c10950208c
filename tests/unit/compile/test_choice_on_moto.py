"""Conditions compiled to Choice rules mean the same on Step Functions (moto's interpreter) as the
workflow format says (switchyard.conditions.evaluate): comparisons of different types are false,
`!=` is `not ==`, a missing path is null."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from moto import mock_aws

from switchyard.compile.choice import choice_rule
from switchyard.conditions import parse_condition
from switchyard.conditions.evaluate import evaluate

CONDITIONS = [
    'steps.a.output.label == "billing"',
    'steps.a.output.label != "billing"',
    "steps.a.output.score >= 0.5",
    "steps.a.output.score < 0.5",
    "steps.a.output.flag == true",
    'steps.a.output.label in ["bug", "billing"]',
    'steps.a.output.label matches "bill*"',
    "steps.a.output.label exists",
    "steps.a.output.label is null",
    "steps.a.output.label is not null",
    'not (steps.a.output.score > 0.9) and steps.a.output.label != "other"',
    "steps.a.output.score == steps.a.output.limit",
    "steps.a.output.score < steps.a.output.limit",
    'inputs.tier == "pro" or steps.a.output.items[1] == 2',
    'steps.a.output.label > "a"',
]
OUTPUTS: list[Any] = [
    {"label": "billing", "score": 0.7, "flag": True, "limit": 0.7, "items": [1, 2]},
    {"label": "bug", "score": 0.2, "flag": False, "limit": 1, "items": [1]},
    {"label": 3, "score": "high", "flag": "yes", "limit": "x"},
    {"label": None, "score": None},
    {},
]


def _machine(conditions: list[str]) -> dict[str, Any]:
    """One Pass per condition recording whether its Choice matched."""
    states: dict[str, Any] = {}
    for index, text in enumerate(conditions):
        last = index == len(conditions) - 1
        follow = {"End": True} if last else {"Next": f"check {index + 1}"}
        rule = choice_rule(parse_condition(text))
        states[f"check {index}"] = {
            "Type": "Choice",
            "Choices": [{**rule, "Next": f"yes {index}"}],
            "Default": f"no {index}",
        }
        for verdict in ("yes", "no"):
            states[f"{verdict} {index}"] = {
                "Type": "Pass",
                "Result": verdict == "yes",
                "ResultPath": f"$.verdicts.c{index}",
                **follow,
            }
    return {"StartAt": "check 0", "States": states}


@pytest.fixture(scope="module")
def verdicts_on_moto() -> list[dict[str, bool]]:
    config = {"stepfunctions": {"execute_state_machine": True}}
    results = []
    with mock_aws(config=config):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(
            name="conditions",
            definition=json.dumps(_machine(CONDITIONS)),
            roleArn="arn:aws:iam::123456789012:role/test",
        )["stateMachineArn"]
        for number, output in enumerate(OUTPUTS):
            state = {"inputs": {"tier": "free"}, "steps": {"a": {"output": output}}, "verdicts": {}}
            execution = sfn.start_execution(
                stateMachineArn=arn, name=f"case-{number}", input=json.dumps(state)
            )["executionArn"]
            while (described := sfn.describe_execution(executionArn=execution))[
                "status"
            ] == "RUNNING":
                time.sleep(0.01)
            assert described["status"] == "SUCCEEDED", described
            results.append(json.loads(described["output"])["verdicts"])
    return results


@pytest.mark.parametrize("case", range(len(OUTPUTS)))
def test_compiled_choice_agrees_with_the_format(
    verdicts_on_moto: list[dict[str, bool]], case: int
) -> None:
    context = {"inputs": {"tier": "free"}, "steps": {"a": {"output": OUTPUTS[case]}}}
    expected = {f"c{i}": evaluate(text, context) for i, text in enumerate(CONDITIONS)}
    assert verdicts_on_moto[case] == expected
