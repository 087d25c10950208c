"""Executions through boto3: start (idempotent by name), describe, list, history, stop, redrive."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from tests.unit.engine.api.support import (
    PIPELINE,
    Endpoint,
    create_machine,
    pipeline_input,
    unique,
    wait_done,
    wait_for_state,
)


@pytest.fixture(scope="module")
def sfn(endpoint: Endpoint) -> Any:
    return endpoint.client()


@pytest.fixture(scope="module")
def machine(sfn: Any) -> str:
    return create_machine(sfn, PIPELINE, "pipeline")


def test_an_execution_runs_pass_choice_wait_and_task_to_its_output(sfn: Any, machine: str) -> None:
    started = sfn.start_execution(stateMachineArn=machine, name="run-1", input=pipeline_input(21))
    assert started["executionArn"] == machine.replace(":stateMachine:", ":execution:") + ":run-1"
    assert isinstance(started["startDate"], datetime)

    described = wait_done(sfn, started["executionArn"])

    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"value": 42}
    assert json.loads(described["input"]) == {"value": 21, "delay": 0, "route": "plain"}
    assert described["inputDetails"] == {"included": True}
    assert described["outputDetails"] == {"included": True}
    assert described["stateMachineArn"] == machine
    assert described["name"] == "run-1"
    assert described["stopDate"] >= described["startDate"]
    assert described["redriveCount"] == 0
    assert described["redriveStatus"] == "NOT_REDRIVABLE"


def test_describe_execution_metadata_only_leaves_the_data_out(sfn: Any, machine: str) -> None:
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(1))["executionArn"]
    wait_done(sfn, arn)

    described = sfn.describe_execution(executionArn=arn, includedData="METADATA_ONLY")

    assert "input" not in described and "output" not in described
    assert described["inputDetails"] == {"included": False}


def test_start_without_a_name_or_input_names_it_and_starts_from_an_empty_object(
    sfn: Any, endpoint: Endpoint
) -> None:
    passing = create_machine(sfn, {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})

    arn = sfn.start_execution(stateMachineArn=passing)["executionArn"]

    described = wait_done(sfn, arn)
    assert described["status"] == "SUCCEEDED" and described["output"] == "{}"
    assert len(described["name"]) == 36  # a UUID, as AWS names it


def test_start_is_idempotent_by_name_while_running_and_conflicts_otherwise(
    sfn: Any, machine: str
) -> None:
    name = unique("same")
    first = sfn.start_execution(
        stateMachineArn=machine, name=name, input=pipeline_input(5, delay=60)
    )

    again = sfn.start_execution(
        stateMachineArn=machine, name=name, input=pipeline_input(5, delay=60)
    )

    assert again["executionArn"] == first["executionArn"]
    assert again["startDate"] == first["startDate"]
    with pytest.raises(sfn.exceptions.ExecutionAlreadyExists):
        sfn.start_execution(stateMachineArn=machine, name=name, input=pipeline_input(6, delay=60))
    sfn.stop_execution(executionArn=first["executionArn"])
    with pytest.raises(sfn.exceptions.ExecutionAlreadyExists):  # closed: a name is used once
        sfn.start_execution(stateMachineArn=machine, name=name, input=pipeline_input(5, delay=60))


def test_start_refuses_input_that_is_not_json(sfn: Any, machine: str) -> None:
    with pytest.raises(sfn.exceptions.InvalidExecutionInput) as raised:
        sfn.start_execution(stateMachineArn=machine, input="{not json")
    assert "Invalid State Machine Execution Input" in str(raised.value)
    with pytest.raises(sfn.exceptions.InvalidExecutionInput):
        sfn.start_execution(stateMachineArn=machine, input='{"value": NaN}')


def test_start_refuses_a_name_the_engine_cannot_use(sfn: Any, machine: str) -> None:
    with pytest.raises(sfn.exceptions.InvalidName):
        sfn.start_execution(stateMachineArn=machine, name="a b", input=pipeline_input(1))


def test_start_on_a_missing_machine_is_state_machine_does_not_exist(sfn: Any) -> None:
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.start_execution(
            stateMachineArn="arn:aws:states:us-east-1:000000000000:stateMachine:nowhere"
        )


@pytest.mark.parametrize(
    "arn",
    [
        "not-an-arn",
        "arn:aws:lambda:us-east-1:000000000000:function:double",
        "arn:aws:states:us-east-1:000000000000:execution:m:run",
    ],
)
def test_start_with_an_arn_that_names_no_state_machine_is_invalid_arn(sfn: Any, arn: str) -> None:
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.start_execution(stateMachineArn=arn)


def test_describe_of_an_unknown_execution_is_execution_does_not_exist(
    sfn: Any, machine: str
) -> None:
    missing = machine.replace(":stateMachine:", ":execution:") + ":never-started"
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist) as raised:
        sfn.describe_execution(executionArn=missing)
    assert raised.value.response["Error"]["Message"] == f"Execution Does Not Exist: '{missing}'"
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.describe_execution(executionArn=machine)


def test_list_executions_filters_by_status_newest_first_in_pages(sfn: Any) -> None:
    machine = create_machine(sfn, PIPELINE, "listing")
    done = [
        sfn.start_execution(stateMachineArn=machine, name=f"done-{i}", input=pipeline_input(i))[
            "executionArn"
        ]
        for i in range(5)
    ]
    for arn in done:
        wait_done(sfn, arn)
    parked = sfn.start_execution(
        stateMachineArn=machine, name="parked", input=pipeline_input(1, delay=60)
    )["executionArn"]

    everything = sfn.list_executions(stateMachineArn=machine)["executions"]
    running = sfn.list_executions(stateMachineArn=machine, statusFilter="RUNNING")["executions"]
    succeeded = sfn.get_paginator("list_executions").paginate(
        stateMachineArn=machine, statusFilter="SUCCEEDED", PaginationConfig={"PageSize": 2}
    )
    pages = [page["executions"] for page in succeeded]

    assert [e["executionArn"] for e in everything] == [parked, *reversed(done)]
    assert [e["executionArn"] for e in running] == [parked]
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [e["executionArn"] for page in pages for e in page] == list(reversed(done))
    item = pages[0][0]
    assert item["status"] == "SUCCEEDED" and item["name"] == "done-4"
    assert item["stateMachineArn"] == machine and isinstance(item["stopDate"], datetime)
    sfn.stop_execution(executionArn=parked)


def test_list_executions_token_is_bound_to_its_filters(sfn: Any, machine: str) -> None:
    for _ in range(2):
        sfn.start_execution(stateMachineArn=machine, input=pipeline_input(1))
    page = sfn.list_executions(stateMachineArn=machine, maxResults=1)
    assert "nextToken" in page

    with pytest.raises(sfn.exceptions.InvalidToken):
        sfn.list_executions(
            stateMachineArn=machine, statusFilter="FAILED", nextToken=page["nextToken"]
        )
    with pytest.raises(sfn.exceptions.InvalidToken):
        sfn.list_executions(stateMachineArn=machine, nextToken="garbage")


def test_list_executions_of_a_missing_machine_is_state_machine_does_not_exist(sfn: Any) -> None:
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.list_executions(stateMachineArn="arn:aws:states:us-east-1:000000000000:stateMachine:x")


def test_list_executions_needs_a_state_machine_and_has_no_map_runs(endpoint: Endpoint) -> None:
    raw = endpoint.client(validate=False)
    with pytest.raises(raw.exceptions.ValidationException):
        raw.list_executions()
    with pytest.raises(raw.exceptions.ResourceNotFound):
        raw.list_executions(mapRunArn="arn:aws:states:us-east-1:000000000000:mapRun:m/label:1234")


def test_history_pages_forward_and_in_reverse(sfn: Any, machine: str) -> None:
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(3))["executionArn"]
    wait_done(sfn, arn)

    whole = sfn.get_execution_history(executionArn=arn)["events"]
    forward = _all_pages(sfn, arn, reverse=False)
    backward = _all_pages(sfn, arn, reverse=True)

    types = [event["type"] for event in whole]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded"
    assert {
        "PassStateEntered",
        "ChoiceStateEntered",
        "WaitStateEntered",
        "TaskScheduled",
        "TaskSucceeded",
        "TaskStateExited",
    } <= set(types)
    assert [e["id"] for e in whole] == list(range(1, len(whole) + 1))
    assert [e["id"] for e in forward] == [e["id"] for e in whole]
    assert [e["id"] for e in backward] == [e["id"] for e in reversed(whole)]
    assert whole[1]["previousEventId"] == 1
    assert all(isinstance(e["timestamp"], datetime) for e in whole)
    started = whole[0]["executionStartedEventDetails"]
    assert json.loads(started["input"]) == json.loads(pipeline_input(3))
    assert json.loads(whole[-1]["executionSucceededEventDetails"]["output"]) == {"value": 6}


def test_history_without_execution_data_leaves_inputs_and_outputs_out(
    sfn: Any, machine: str
) -> None:
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(3))["executionArn"]
    wait_done(sfn, arn)

    events = sfn.get_execution_history(executionArn=arn, includeExecutionData=False)["events"]

    entered = next(e for e in events if e["type"] == "PassStateEntered")
    assert entered["stateEnteredEventDetails"]["name"] == "Prepare"
    assert "input" not in entered["stateEnteredEventDetails"]
    assert "output" not in events[-1].get("executionSucceededEventDetails", {})


def test_history_of_an_unknown_execution_and_a_bad_token(sfn: Any, machine: str) -> None:
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(3))["executionArn"]
    wait_done(sfn, arn)
    page = sfn.get_execution_history(executionArn=arn, maxResults=2)

    with pytest.raises(sfn.exceptions.InvalidToken):  # issued for the other direction
        sfn.get_execution_history(executionArn=arn, reverseOrder=True, nextToken=page["nextToken"])
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.get_execution_history(executionArn=arn + "-nope")


def test_stop_aborts_a_running_execution_with_error_and_cause(sfn: Any, machine: str) -> None:
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(1, delay=60))[
        "executionArn"
    ]
    wait_for_state(sfn, arn, "WaitStateEntered")

    stopped = sfn.stop_execution(executionArn=arn, error="Operator.Stop", cause="not needed")

    described = sfn.describe_execution(executionArn=arn)
    assert described["status"] == "ABORTED"
    assert described["error"] == "Operator.Stop" and described["cause"] == "not needed"
    assert described["stopDate"] == stopped["stopDate"]
    assert described["redriveStatus"] == "REDRIVABLE"
    events = sfn.get_execution_history(executionArn=arn, reverseOrder=True)["events"]
    assert events[0]["type"] == "ExecutionAborted"
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.stop_execution(executionArn=arn + "-nope")


def test_redrive_runs_a_failed_execution_again_from_the_failed_state(
    sfn: Any, machine: str, endpoint: Endpoint
) -> None:
    arn = sfn.start_execution(
        stateMachineArn=machine, name=unique("flaky"), input=pipeline_input(4, route="flaky")
    )["executionArn"]
    failed = wait_done(sfn, arn)
    assert failed["status"] == "FAILED" and failed["error"] == "FlakyError"
    assert failed["redriveStatus"] == "REDRIVABLE"
    with pytest.raises(sfn.exceptions.ExecutionNotRedrivable):
        sfn.redrive_execution(executionArn=_succeeded(sfn, machine))

    redriven = sfn.redrive_execution(executionArn=arn, clientToken="redrive-once")
    repeated = sfn.redrive_execution(executionArn=arn, clientToken="redrive-once")

    assert repeated["redriveDate"] == redriven["redriveDate"]  # the same token redrives once
    described = wait_done(sfn, arn)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"value": 8}
    assert described["redriveCount"] == 1
    assert described["redriveDate"] == redriven["redriveDate"]
    types = [e["type"] for e in sfn.get_execution_history(executionArn=arn)["events"]]
    assert types.count("ExecutionRedriven") == 1 and types.count("ExecutionFailed") == 1
    redriven_only = sfn.list_executions(stateMachineArn=machine, redriveFilter="REDRIVEN")
    assert [e["executionArn"] for e in redriven_only["executions"]] == [arn]
    with pytest.raises(sfn.exceptions.ExecutionNotRedrivable):
        sfn.redrive_execution(executionArn=arn)


def test_redrive_of_an_unknown_execution(sfn: Any, machine: str) -> None:
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.redrive_execution(
            executionArn=machine.replace(":stateMachine:", ":execution:") + ":ghost"
        )


def test_describe_state_machine_for_execution_is_the_definition_it_ran(sfn: Any) -> None:
    machine = create_machine(sfn, PIPELINE, "for-execution")
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(2))["executionArn"]
    wait_done(sfn, arn)
    changed = {**PIPELINE, "Comment": "changed since"}
    sfn.update_state_machine(stateMachineArn=machine, definition=json.dumps(changed))

    described = sfn.describe_state_machine_for_execution(executionArn=arn)

    assert json.loads(described["definition"]) == PIPELINE
    assert described["stateMachineArn"] == machine
    assert described["name"] == machine.rsplit(":", 1)[1]
    assert isinstance(described["updateDate"], datetime)
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_state_machine_for_execution(executionArn=arn + "-nope")


def _all_pages(sfn: Any, arn: str, *, reverse: bool) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        extra = {"nextToken": token} if token else {}
        page = sfn.get_execution_history(
            executionArn=arn, maxResults=3, reverseOrder=reverse, **extra
        )
        assert len(page["events"]) <= 3
        events += page["events"]
        token = page.get("nextToken")
        if token is None:
            return events


def _succeeded(sfn: Any, machine: str) -> str:
    arn = str(sfn.start_execution(stateMachineArn=machine, input=pipeline_input(1))["executionArn"])
    wait_done(sfn, arn)
    return arn


def test_executions_outlive_their_deleted_machine(sfn: Any) -> None:
    machine = create_machine(sfn, PIPELINE, "deleted")
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(5))["executionArn"]
    wait_done(sfn, arn)

    sfn.delete_state_machine(stateMachineArn=machine)

    assert json.loads(sfn.describe_execution(executionArn=arn)["output"]) == {"value": 10}
    described = sfn.describe_state_machine_for_execution(executionArn=arn)
    assert json.loads(described["definition"]) == PIPELINE
    assert sfn.get_execution_history(executionArn=arn)["events"]
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.list_executions(stateMachineArn=machine)
