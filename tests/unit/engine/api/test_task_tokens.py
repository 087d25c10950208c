"""Callbacks for `.waitForTaskToken` tasks through boto3: success, failure, heartbeat."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.unit.engine.api.support import CALLBACK, Endpoint, create_machine, unique, wait_done


@pytest.fixture(scope="module")
def sfn(endpoint: Endpoint) -> Any:
    return endpoint.client()


@pytest.fixture(scope="module")
def machine(sfn: Any) -> str:
    return create_machine(sfn, CALLBACK, "callback")


def _waiting(sfn: Any, endpoint: Endpoint, machine: str) -> tuple[str, str]:
    """(execution ARN, task token) of an execution parked on its callback task."""
    name = unique("ask")
    arn = sfn.start_execution(stateMachineArn=machine, name=name)["executionArn"]
    return arn, endpoint.functions.token(name)


def test_send_task_success_completes_the_task_with_its_output(
    sfn: Any, endpoint: Endpoint, machine: str
) -> None:
    arn, token = _waiting(sfn, endpoint, machine)
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"

    sfn.send_task_heartbeat(taskToken=token)
    sfn.send_task_success(taskToken=token, output=json.dumps({"approved": True}))

    described = wait_done(sfn, arn)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"approved": True}


def test_send_task_failure_fails_the_task_with_error_and_cause(
    sfn: Any, endpoint: Endpoint, machine: str
) -> None:
    arn, token = _waiting(sfn, endpoint, machine)

    sfn.send_task_failure(taskToken=token, error="Rejected", cause="a person said no")

    described = wait_done(sfn, arn)
    assert described["status"] == "FAILED"
    assert (described["error"], described["cause"]) == ("Rejected", "a person said no")
    events = sfn.get_execution_history(executionArn=arn)["events"]
    failed = next(e for e in events if e["type"] == "TaskFailed")["taskFailedEventDetails"]
    assert (failed["error"], failed["cause"]) == ("Rejected", "a person said no")


def test_send_task_success_refuses_output_that_is_not_json(
    sfn: Any, endpoint: Endpoint, machine: str
) -> None:
    arn, token = _waiting(sfn, endpoint, machine)

    with pytest.raises(sfn.exceptions.InvalidOutput):
        sfn.send_task_success(taskToken=token, output="{not json")

    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    sfn.stop_execution(executionArn=arn)


def test_heartbeats_keep_a_task_past_its_heartbeat_seconds(sfn: Any, endpoint: Endpoint) -> None:
    brisk = json.loads(json.dumps(CALLBACK))
    brisk["States"]["Ask"]["HeartbeatSeconds"] = 1
    machine = create_machine(sfn, brisk, "heartbeat")
    name = unique("beating")
    arn = sfn.start_execution(stateMachineArn=machine, name=name)["executionArn"]
    token = endpoint.functions.token(name)

    for _ in range(4):  # 1.6 s in all, never 1 s without a heartbeat
        time.sleep(0.4)
        sfn.send_task_heartbeat(taskToken=token)

    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    sfn.send_task_success(taskToken=token, output="true")
    assert wait_done(sfn, arn)["status"] == "SUCCEEDED"


@pytest.mark.parametrize("closed_by", ["success", "stop"])
def test_a_token_of_a_closed_task_is_task_timed_out(
    sfn: Any, endpoint: Endpoint, machine: str, closed_by: str
) -> None:
    arn, token = _waiting(sfn, endpoint, machine)
    if closed_by == "success":
        sfn.send_task_success(taskToken=token, output="{}")
    else:
        sfn.stop_execution(executionArn=arn)
    wait_done(sfn, arn)

    with pytest.raises(sfn.exceptions.TaskTimedOut):
        sfn.send_task_success(taskToken=token, output="{}")


@pytest.mark.parametrize("call", ["success", "failure", "heartbeat"])
def test_an_unknown_token_is_task_does_not_exist(sfn: Any, call: str) -> None:
    send = {
        "success": lambda: sfn.send_task_success(taskToken="no-such-token", output="{}"),
        "failure": lambda: sfn.send_task_failure(taskToken="no-such-token", error="E"),
        "heartbeat": lambda: sfn.send_task_heartbeat(taskToken="no-such-token"),
    }[call]
    with pytest.raises(sfn.exceptions.TaskDoesNotExist):
        send()
