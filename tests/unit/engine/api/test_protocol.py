"""The JSON protocol itself, over raw HTTP and through boto3 with its own checks off: what a
client that is not botocore sees, and the server's checks against the service model."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

import pytest

from switchyard.engine.api import OPERATIONS
from tests.unit.engine.api.support import Endpoint

REQUIRED = {
    "CreateStateMachine",
    "UpdateStateMachine",
    "DeleteStateMachine",
    "DescribeStateMachine",
    "ListStateMachines",
    "PublishStateMachineVersion",
    "ListStateMachineVersions",
    "CreateStateMachineAlias",
    "DescribeStateMachineAlias",
    "StartExecution",
    "DescribeExecution",
    "ListExecutions",
    "GetExecutionHistory",
    "StopExecution",
    "RedriveExecution",
    "SendTaskSuccess",
    "SendTaskFailure",
    "SendTaskHeartbeat",
    "DescribeStateMachineForExecution",
}


def _post(endpoint: Endpoint, target: str, body: bytes) -> tuple[int, Message, Any]:
    request = urllib.request.Request(
        endpoint.url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


def test_every_required_operation_is_served() -> None:
    assert set(OPERATIONS) >= REQUIRED


def test_a_call_answers_json_with_epoch_second_timestamps(endpoint: Endpoint) -> None:
    status, headers, body = _post(endpoint, "AWSStepFunctions.ListStateMachines", b"{}")

    assert status == 200
    assert headers["Content-Type"] == "application/x-amz-json-1.0"
    assert headers["x-amzn-RequestId"]
    assert isinstance(body["stateMachines"], list)
    for machine in body["stateMachines"]:
        assert isinstance(machine["creationDate"], float)


def test_an_error_is_http_400_with_type_and_message(endpoint: Endpoint) -> None:
    arn = "arn:aws:states:us-east-1:000000000000:execution:m:missing"
    status, _, body = _post(
        endpoint, "AWSStepFunctions.DescribeExecution", json.dumps({"executionArn": arn}).encode()
    )

    assert status == 400
    assert body == {
        "__type": "ExecutionDoesNotExist",
        "message": f"Execution Does Not Exist: '{arn}'",
    }


def test_an_unknown_operation_is_refused(endpoint: Endpoint) -> None:
    for target in ("AWSStepFunctions.CreateActivity", "AWSStepFunctions.Nope", "Other.Thing"):
        status, _, body = _post(endpoint, target, b"{}")
        assert (status, body["__type"]) == (400, "UnknownOperationException")


def test_a_body_that_is_not_a_json_object_is_a_serialization_exception(endpoint: Endpoint) -> None:
    for body in (b"{nope", b"[1, 2]"):
        status, _, answer = _post(endpoint, "AWSStepFunctions.ListStateMachines", body)
        assert (status, answer["__type"]) == (400, "SerializationException")


def test_a_member_of_the_wrong_type_is_a_serialization_exception(endpoint: Endpoint) -> None:
    status, _, body = _post(
        endpoint, "AWSStepFunctions.ListExecutions", json.dumps({"stateMachineArn": 7}).encode()
    )
    assert (status, body["__type"]) == (400, "SerializationException")


def test_missing_required_members_are_a_validation_exception_in_aws_words(
    endpoint: Endpoint,
) -> None:
    raw = endpoint.client(validate=False)

    with pytest.raises(raw.exceptions.ValidationException) as raised:
        raw.create_state_machine(name="m")

    assert raised.value.response["Error"]["Message"] == (
        "2 validation errors detected: "
        "Value null at 'definition' failed to satisfy constraint: Member must not be null; "
        "Value null at 'roleArn' failed to satisfy constraint: Member must not be null"
    )
    for call in (
        lambda: raw.start_execution(),
        lambda: raw.describe_execution(),
        lambda: raw.send_task_success(taskToken="t"),
        lambda: raw.get_execution_history(),
    ):
        with pytest.raises(raw.exceptions.ValidationException):
            call()


def test_constraints_of_the_model_are_checked(endpoint: Endpoint) -> None:
    raw = endpoint.client(validate=False)
    arn = "arn:aws:states:us-east-1:000000000000:stateMachine:m"

    with pytest.raises(raw.exceptions.ValidationException) as raised:
        raw.list_executions(stateMachineArn=arn, statusFilter="DONE", maxResults=5000)

    message = raised.value.response["Error"]["Message"]
    assert message.startswith("2 validation errors detected: ")
    assert (
        "Value 'DONE' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum"
        in message
    )
    assert "Member must have value less than or equal to 1000" in message
    with pytest.raises(raw.exceptions.ValidationException):
        raw.start_execution(stateMachineArn=arn, name="x" * 81)
    with pytest.raises(raw.exceptions.ValidationException):
        raw.send_task_success(taskToken="", output="{}")
