"""Definition parsing into typed states, and InvalidDefinition-style problems."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from switchyard.engine.asl import (
    InvalidDefinitionError,
    JitterStrategy,
    ReferencePath,
    StatesError,
    parse_definition,
)
from switchyard.engine.asl import states as st

COMPLETE: dict[str, Any] = {
    "Comment": "every state type",
    "TimeoutSeconds": 3600,
    "StartAt": "Prepare",
    "States": {
        "Prepare": {
            "Type": "Pass",
            "Parameters": {"run.$": "$.run", "static": 1},
            "ResultPath": "$.prepared",
            "Next": "Call",
        },
        "Call": {
            "Type": "Task",
            "Resource": "${AgentStepFunctionArn}",
            "Parameters": {"token.$": "$$.Task.Token", "input.$": "$.prepared"},
            "ResultSelector": {"out.$": "$.Payload"},
            "ResultPath": "$.call",
            "TimeoutSecondsPath": "$.timeout",
            "HeartbeatSeconds": 30,
            "Retry": [
                {"ErrorEquals": ["rate_limit"], "IntervalSeconds": 2, "MaxAttempts": 5,
                 "BackoffRate": 1.5, "MaxDelaySeconds": 60, "JitterStrategy": "FULL"},
                {"ErrorEquals": ["States.ALL"]},
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Failed"}],
            "Next": "Route",
        },
        "Route": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.call.out.ok", "BooleanEquals": True, "Next": "Fan"},
                {"And": [{"Variable": "$.n", "IsPresent": True},
                         {"Variable": "$.n", "NumericGreaterThan": 3}], "Next": "Hold"},
            ],
            "Default": "Failed",
        },
        "Hold": {"Type": "Wait", "SecondsPath": "$.delay", "Next": "Fan"},
        "Fan": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "B1", "States": {"B1": {"Type": "Pass", "End": True}}},
                {"StartAt": "B2", "States": {"B2": {"Type": "Succeed"}}},
            ],
            "ResultPath": None,
            "Next": "Each",
        },
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "ItemSelector": {"item.$": "$$.Map.Item.Value"},
            "MaxConcurrency": 4,
            "ToleratedFailurePercentage": 10,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Work",
                "States": {"Work": {"Type": "Pass", "End": True}},
            },
            "Next": "Done",
        },
        "Done": {"Type": "Succeed", "OutputPath": "$.call"},
        "Failed": {"Type": "Fail", "ErrorPath": "$.error.Error",
                   "CausePath": "States.Format('failed: {}', $.error.Cause)"},
    },
}  # fmt: skip


def test_every_state_type_parses_into_typed_immutable_states() -> None:
    machine = parse_definition(json.dumps(COMPLETE))
    assert machine.start_at == "Prepare" and machine.timeout_seconds == 3600
    assert [s.type for s in machine.states.values()] == [
        "Pass", "Task", "Choice", "Wait", "Parallel", "Map", "Succeed", "Fail",
    ]  # fmt: skip
    task = machine["Call"]
    assert isinstance(task, st.Task)
    assert task.heartbeat_seconds == 30 and task.timeout_seconds_path is not None
    assert task.retry[0].jitter_strategy is JitterStrategy.FULL
    assert task.retry[0].max_delay_seconds == 60 and task.retry[1].max_attempts == 3
    assert task.catch[0].next == "Failed"
    assert isinstance(task.result_path, ReferencePath) and task.result_path.steps == ("call",)
    parallel = machine["Fan"]
    assert isinstance(parallel, st.Parallel) and parallel.result_path is None
    assert len(parallel.branches) == 2
    mapped = machine["Each"]
    assert isinstance(mapped, st.Map)
    assert mapped.max_concurrency == 4 and mapped.tolerated_failure_percentage == 10
    assert mapped.item_processor.start_at == "Work"
    assert mapped.items_path is not None and mapped.items_path.steps == ("items",)
    with pytest.raises(AttributeError):
        task.resource = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        machine.states["New"] = task  # type: ignore[index]


def test_fail_state_error_and_cause_paths() -> None:
    failed = parse_definition(COMPLETE)["Failed"]
    assert isinstance(failed, st.Fail)
    failure = failed.failure({"error": {"Error": "E", "Cause": "c"}}, {})
    assert (failure.error, failure.cause) == ("E", "failed: c")


def test_legacy_iterator_and_parameters_of_a_map() -> None:
    definition = {
        "StartAt": "M",
        "States": {
            "M": {
                "Type": "Map",
                "Parameters": {"x.$": "$$.Map.Item.Value"},
                "Iterator": {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": True}}},
                "End": True,
            }
        },
    }
    mapped = parse_definition(definition)["M"]
    assert isinstance(mapped, st.Map) and mapped.item_selector is not None


def test_absent_and_null_paths() -> None:
    machine = parse_definition(
        {"StartAt": "P", "States": {"P": {"Type": "Pass", "InputPath": None, "End": True}}}
    )
    state = machine["P"]
    assert state.input_path is None
    assert state.output_path is not None and state.output_path.text == "$"


def with_state(name: str, **fields: Any) -> dict[str, Any]:
    definition = copy.deepcopy(COMPLETE)
    definition["States"][name].update(fields)
    return definition


def without(name: str, field: str) -> dict[str, Any]:
    definition = copy.deepcopy(COMPLETE)
    del definition["States"][name][field]
    return definition


def replaced(name: str, state: dict[str, Any]) -> dict[str, Any]:
    definition = copy.deepcopy(COMPLETE)
    definition["States"][name] = state
    return definition


def retry(**fields: Any) -> dict[str, Any]:
    return with_state("Call", Retry=[{"ErrorEquals": ["x"], **fields}])


SUCCEED = {"Type": "Succeed"}
CALL = {**COMPLETE["States"]["Call"]}
del CALL["TimeoutSecondsPath"]

INVALID: list[tuple[str, Any, str]] = [
    ("json", "{nope", "INVALID_JSON_DESCRIPTION"),
    ("jsonata", {**COMPLETE, "QueryLanguage": "JSONata"}, "'JSONata' is not supported"),
    ("jsonata-state", with_state("Prepare", QueryLanguage="JSONata"), "Prepare/QueryLanguage"),
    ("unknown-field", with_state("Prepare", Foo=1), "not supported for a Pass state at"),
    ("unknown-type", with_state("Prepare", Type="Nope"), "'Type' must be one of"),
    ("missing-next", with_state("Prepare", Next="Nowhere"), "Missing 'Next' target: Nowhere"),
    ("next-and-end", with_state("Prepare", End=True), "both 'Next' and 'End'"),
    ("no-next-no-end", without("Prepare", "Next"), "MISSING_TRANSITION_TARGET"),
    (
        "unreachable",
        {**COMPLETE, "States": {**COMPLETE["States"], "Orphan": SUCCEED}},
        "UNREACHABLE_STATE: State 'Orphan' is not reachable",
    ),
    ("start-at", {**COMPLETE, "StartAt": "Nope"}, "Missing 'StartAt' target: Nope"),
    ("bad-path", with_state("Prepare", InputPath="nope"), "at /States/Prepare/InputPath"),
    ("bad-result-path", with_state("Prepare", ResultPath="$.a[*]"), "not a valid reference path"),
    (
        "bad-template",
        with_state("Prepare", Parameters={"x.$": "States.Nope()"}),
        "at /States/Prepare/Parameters/x.$",
    ),
    (
        "bad-intrinsic-arity",
        with_state("Prepare", Parameters={"x.$": "States.ArrayLength()"}),
        "takes 1 argument",
    ),
    ("task-resource", without("Call", "Resource"), "needs a string 'Resource'"),
    ("timeout-both", with_state("Call", TimeoutSeconds=30), "Only one of"),
    (
        "heartbeat-too-long",
        replaced("Call", {**CALL, "TimeoutSeconds": 30}),
        "'HeartbeatSeconds' must be smaller than 'TimeoutSeconds'",
    ),
    (
        "all-not-last",
        with_state("Call", Retry=[{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["x"]}]),
        "'States.ALL' must appear alone",
    ),
    (
        "all-not-alone",
        with_state("Call", Catch=[{"ErrorEquals": ["States.ALL", "x"], "Next": "Failed"}]),
        "'States.ALL' must appear alone",
    ),
    ("backoff", retry(BackoffRate=0.5), "'BackoffRate' must be a number of at least 1.0"),
    ("jitter", retry(JitterStrategy="HALF"), "'JitterStrategy' must be FULL or NONE"),
    ("interval", retry(IntervalSeconds=0), "'IntervalSeconds' must be a positive integer"),
    ("attempts", retry(MaxAttempts=-1), "'MaxAttempts' must be a non-negative integer"),
    (
        "catch-next",
        with_state("Call", Catch=[{"ErrorEquals": ["x"], "Next": "Nope"}]),
        "Missing 'Catch' target: Nope",
    ),
    ("choice-empty", with_state("Route", Choices=[]), "non-empty 'Choices'"),
    (
        "choice-rule",
        with_state("Route", Choices=[{"Variable": "$.a", "StringEquals": 1, "Next": "Fan"}]),
        "at /States/Route/Choices/0/StringEquals",
    ),
    ("wait-two", with_state("Hold", Seconds=3), "exactly one of Seconds"),
    (
        "wait-timestamp",
        replaced("Hold", {"Type": "Wait", "Timestamp": "tomorrow", "Next": "Fan"}),
        "RFC3339",
    ),
    ("fail-both", with_state("Failed", Error="E"), "Only one of 'Error' and 'ErrorPath'"),
    ("parallel-empty", with_state("Fan", Branches=[]), "non-empty 'Branches'"),
    (
        "branch-unreachable",
        with_state("Fan", Branches=[{"StartAt": "B1", "States": {"B1": SUCCEED, "B9": SUCCEED}}]),
        "at /States/Fan/Branches/0/States/B9",
    ),
    (
        "duplicate-name",
        with_state("Fan", Branches=[{"StartAt": "Prepare", "States": {"Prepare": SUCCEED}}]),
        "DUPLICATE_STATE_NAME",
    ),
    (
        "map-both-processors",
        with_state("Each", Iterator={"StartAt": "X", "States": {"X": SUCCEED}}),
        "exactly one of 'ItemProcessor' and 'Iterator'",
    ),
    ("map-concurrency", with_state("Each", MaxConcurrency=-1), "'MaxConcurrency' must be an"),
    ("map-percentage", with_state("Each", ToleratedFailurePercentage=150), "from 0 to 100"),
    (
        "map-mode",
        with_state(
            "Each",
            ItemProcessor={
                "ProcessorConfig": {"Mode": "FAST"},
                "StartAt": "W",
                "States": {"W": SUCCEED},
            },
        ),
        "INLINE or DISTRIBUTED",
    ),
    ("assign", with_state("Prepare", Assign={"x": 1}), "'Assign' is not supported by this engine"),
]


@pytest.mark.parametrize(("case", "definition", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_definitions(case: str, definition: Any, message: str) -> None:
    with pytest.raises(InvalidDefinitionError) as caught:
        parse_definition(definition)
    text = str(caught.value)
    assert text.startswith("Invalid State Machine Definition: '")
    assert message in text
    assert caught.value.problems


def test_every_problem_is_reported_once_per_state() -> None:
    definition = copy.deepcopy(COMPLETE)
    definition["States"]["Prepare"]["Foo"] = 1
    definition["States"]["Hold"]["Seconds"] = 1
    with pytest.raises(InvalidDefinitionError) as caught:
        parse_definition(definition)
    locations = [problem.location for problem in caught.value.problems]
    assert "/States/Prepare/Foo" in locations and "/States/Hold" in locations


def test_errors_enum_names_every_states_error() -> None:
    assert {e.value for e in StatesError} >= {
        "States.ALL", "States.HeartbeatTimeout", "States.Timeout", "States.TaskFailed",
        "States.Permissions", "States.ResultPathMatchFailure", "States.ParameterPathFailure",
        "States.QueryEvaluationError", "States.BranchFailed", "States.NoChoiceMatched",
        "States.IntrinsicFailure", "States.ExceedToleratedFailureThreshold",
        "States.ItemReaderFailed", "States.ResultWriterFailed", "States.Runtime",
        "States.DataLimitExceeded",
    }  # fmt: skip


STATEMACHINES = Path(__file__).resolve().parents[4] / "statemachines"


@pytest.mark.parametrize(
    "path",
    sorted(STATEMACHINES.glob("*.asl.json")) if STATEMACHINES.is_dir() else [],
    ids=lambda p: p.name,
)
def test_committed_compiled_machines_parse(path: Path) -> None:
    # The compiler's output is this engine's input: every committed machine must parse.
    parse_definition(path.read_text())
