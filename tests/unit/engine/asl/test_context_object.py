"""The context object builder, and its shape against moto's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from switchyard.engine.asl import ExecutionContext, MapItem, format_timestamp
from tests.unit.engine.asl.moto_sfn import ROLE_ARN, MotoStepFunctions, parameters_machine

START = datetime(2026, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)


def context(**overrides: object) -> ExecutionContext:
    values: dict[str, object] = {
        "execution_id": "arn:aws:states:us-east-1:123456789012:execution:m:e",
        "execution_name": "e",
        "execution_input": {"a": 1},
        "start_time": START,
        "role_arn": ROLE_ARN,
        "state_machine_id": "arn:aws:states:us-east-1:123456789012:stateMachine:m",
        "state_machine_name": "m",
    }
    values.update(overrides)
    return ExecutionContext(**values)  # type: ignore[arg-type]


def test_timestamps_are_utc_milliseconds_with_z() -> None:
    assert format_timestamp(START) == "2026-01-02T03:04:05.678Z"
    plus_two = START.astimezone(timezone(timedelta(hours=2)))
    assert format_timestamp(plus_two) == "2026-01-02T03:04:05.678Z"
    with pytest.raises(ValueError):
        format_timestamp(datetime(2026, 1, 1))


def test_a_plain_state_sees_execution_state_and_machine() -> None:
    built = context().for_state("Step", START + timedelta(seconds=1), retry_count=2)
    assert built == {
        "Execution": {
            "Id": "arn:aws:states:us-east-1:123456789012:execution:m:e",
            "Input": {"a": 1},
            "StartTime": "2026-01-02T03:04:05.678Z",
            "Name": "e",
            "RoleArn": ROLE_ARN,
            "RedriveCount": 0,
        },
        "State": {"EnteredTime": "2026-01-02T03:04:06.678Z", "Name": "Step", "RetryCount": 2},
        "StateMachine": {"Id": "arn:aws:states:us-east-1:123456789012:stateMachine:m", "Name": "m"},
    }


def test_task_token_map_item_and_redrive_appear_only_when_given() -> None:
    redriven = context(redrive_count=1, redrive_time=START + timedelta(days=1))
    built = redriven.for_state("S", START, task_token="tok", map_item=MapItem(3, {"x": 1}))
    assert built["Task"] == {"Token": "tok"}
    assert built["Map"] == {"Item": {"Index": 3, "Value": {"x": 1}}}
    assert built["Execution"]["RedriveCount"] == 1
    assert built["Execution"]["RedriveTime"] == "2026-01-03T03:04:05.678Z"
    assert "Task" not in context().for_state("S", START)


def test_same_values_at_the_same_paths_as_moto(moto_sfn: MotoStepFunctions) -> None:
    fields = {
        "id.$": "$$.Execution.Id",
        "name.$": "$$.Execution.Name",
        "input.$": "$$.Execution.Input",
        "role.$": "$$.Execution.RoleArn",
        "state.$": "$$.State.Name",
        "machine.$": "$$.StateMachine",
    }
    theirs = moto_sfn.run(parameters_machine(fields), {"a": 1}).output
    ours = context(
        execution_id=theirs["id"],
        execution_name=theirs["name"],
        state_machine_id=theirs["machine"]["Id"],
        state_machine_name=theirs["machine"]["Name"],
    ).for_state("P", START)
    assert ours["Execution"]["Input"] == theirs["input"]
    assert ours["Execution"]["RoleArn"] == theirs["role"]
    assert ours["State"]["Name"] == theirs["state"]
    assert ours["StateMachine"] == theirs["machine"]


def test_known_moto_deviation_redrive_and_retry_counts(moto_sfn: MotoStepFunctions) -> None:
    # AWS documents Execution.RedriveCount and State.RetryCount; moto's context has neither.
    outcome = moto_sfn.run(parameters_machine({"r.$": "$$.Execution.RedriveCount"}), {})
    assert outcome.error == "States.Runtime"
    assert "RetryCount" not in moto_sfn.run(parameters_machine({"s.$": "$$.State"}), {}).output["s"]
    built = context().for_state("P", START)
    assert built["Execution"]["RedriveCount"] == 0
    assert built["State"]["RetryCount"] == 0


def test_map_item_matches_moto(moto_sfn: MotoStepFunctions) -> None:
    definition = {
        "StartAt": "M",
        "States": {
            "M": {
                "Type": "Map",
                "ItemsPath": "$.xs",
                "ItemSelector": {"i.$": "$$.Map.Item.Index", "v.$": "$$.Map.Item.Value"},
                "ItemProcessor": {
                    "StartAt": "P",
                    "States": {"P": {"Type": "Pass", "End": True}},
                },
                "End": True,
            }
        },
    }
    theirs = moto_sfn.run(definition, {"xs": ["a", {"b": 2}]}).output
    ours = [
        {"i": item["Map"]["Item"]["Index"], "v": item["Map"]["Item"]["Value"]}
        for item in (
            context().for_state("M", START, map_item=MapItem(i, v))
            for i, v in enumerate(["a", {"b": 2}])
        )
    ]
    assert ours == theirs
