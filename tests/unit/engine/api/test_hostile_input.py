"""Input that PostgreSQL or Python cannot hold, sent to the Step Functions port: refused with the
error Step Functions gives for that member (InvalidExecutionInput, InvalidOutput,
ValidationException, SerializationException), never a 500, and nothing stored."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import httpx
import pytest

from switchyard.serving import MAX_JSON_DEPTH
from tests.unit.engine.api.support import (
    CALLBACK,
    PIPELINE,
    Endpoint,
    create_machine,
    pipeline_input,
    unique,
    wait_done,
)


@pytest.fixture(scope="module")
def sfn(endpoint: Endpoint) -> Any:
    return endpoint.client(validate=False)


@pytest.fixture(scope="module")
def machine(sfn: Any) -> str:
    return create_machine(sfn, PIPELINE, "hostile")


def _call(endpoint: Endpoint, operation: str, body: bytes) -> httpx.Response:
    return httpx.post(
        endpoint.url,
        content=body,
        headers={
            "X-Amz-Target": f"AWSStepFunctions.{operation}",
            "Content-Type": "application/x-amz-json-1.0",
        },
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ('{"value": "a\\u0000b"}', "NUL character"),
        ('{"a\\u0000": 1}', "NUL character"),
        ('{"value": "\\ud800"}', "lone surrogate"),
        ('{"value": 1e400}', "too large"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "deeper"),
        ("[" * 50_000 + "]" * 50_000, "deeper"),
    ],
)
def test_an_input_the_engine_cannot_store_is_invalid_execution_input(
    sfn: Any, machine: str, data: str, problem: str
) -> None:
    name = unique("bad")
    with pytest.raises(sfn.exceptions.InvalidExecutionInput) as refused:
        sfn.start_execution(stateMachineArn=machine, name=name, input=data)
    assert problem in refused.value.response["Error"]["Message"]
    listed = sfn.list_executions(stateMachineArn=machine)["executions"]
    assert name not in [execution["name"] for execution in listed]


def test_an_input_with_an_escaped_surrogate_pair_is_stored_faithfully(
    sfn: Any, machine: str
) -> None:
    data = json.dumps({"value": 2, "delay": 0, "route": "plain", "note": "\U0001f600 ok"})
    arn = sfn.start_execution(stateMachineArn=machine, name=unique("pair"), input=data)[
        "executionArn"
    ]
    described = sfn.describe_execution(executionArn=arn)
    assert json.loads(described["input"])["note"] == "\U0001f600 ok"
    assert wait_done(sfn, arn)["status"] == "SUCCEEDED"


@pytest.mark.parametrize(
    "body",
    [
        b'{"stateMachineArn": "arn:aws:states:us-east-1:0:stateMachine:m", "name": "a\\u0000"}',
        b'{"stateMachineArn": "arn:aws:states:us-east-1:0:stateMachine:m\\ud800"}',
    ],
)
def test_a_member_the_engine_cannot_store_is_a_validation_exception(
    endpoint: Endpoint, body: bytes
) -> None:
    answer = _call(endpoint, "StartExecution", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["__type"] == "ValidationException"
    assert "NUL character or a lone surrogate" in answer.json()["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"maxResults": 1e400}',
        b'{"a": NaN}',
        b"\xff\xfe{}",
    ],
)
def test_a_body_that_is_not_holdable_json_is_a_serialization_exception(
    endpoint: Endpoint, body: bytes
) -> None:
    answer = _call(endpoint, "ListStateMachines", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["__type"] in ("SerializationException", "ValidationException")


def test_a_task_output_the_engine_cannot_store_is_invalid_output(
    endpoint: Endpoint, sfn: Any
) -> None:
    machine = create_machine(sfn, CALLBACK, "hostile-callback")
    name = unique("ask")
    arn = sfn.start_execution(stateMachineArn=machine, name=name)["executionArn"]
    token = endpoint.functions.token(name)
    for output in ('{"a": "\\u0000"}', '"\\udc00"', "[" * 65 + "]" * 65):
        with pytest.raises(sfn.exceptions.InvalidOutput):
            sfn.send_task_success(taskToken=token, output=output)
    assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
    sfn.send_task_success(taskToken=token, output='{"fine": "\\u00e9"}')
    assert json.loads(wait_done(sfn, arn)["output"]) == {"fine": "é"}


def _raw(endpoint: Endpoint, data: bytes) -> bytes:
    with socket.create_connection(endpoint.server.server_address, timeout=10) as conn:
        conn.sendall(data)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


def test_a_400_mb_call_is_413_in_the_protocols_shape_before_it_is_read(
    endpoint: Endpoint,
) -> None:
    answer = _raw(
        endpoint,
        b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AWSStepFunctions.StartExecution\r\n"
        b"Content-Type: application/x-amz-json-1.0\r\nContent-Length: 419430400\r\n\r\n{",
    )
    assert answer.startswith(b"HTTP/1.1 413")
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["__type"] == "RequestEntityTooLargeException"


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST / HTTP/9\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
    ],
)
def test_a_malformed_call_gets_a_status_line_and_a_serialization_exception(
    endpoint: Endpoint, request_bytes: bytes
) -> None:
    answer = _raw(endpoint, request_bytes)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["__type"] == "SerializationException"


def test_a_method_other_than_post_is_405(endpoint: Endpoint) -> None:
    answer = httpx.get(endpoint.url)
    assert answer.status_code == 405
    assert answer.json()["__type"] == "UnknownOperationException"


def test_400_simultaneous_connections_are_all_answered(endpoint: Endpoint) -> None:
    call = (
        b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AWSStepFunctions.ListStateMachines\r\n"
        b"Content-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\n"
        b"Connection: close\r\n\r\n{}"
    )
    connections = [
        socket.create_connection(endpoint.server.server_address, timeout=60) for _ in range(400)
    ]
    answers: list[bytes] = [b""] * len(connections)

    def read(index: int) -> None:
        received = b""
        while chunk := connections[index].recv(65536):
            received += chunk
        answers[index] = received

    try:
        for conn in connections:  # all connected, then all sent, before any answer is read
            conn.sendall(call)
        readers = [threading.Thread(target=read, args=(i,)) for i in range(len(connections))]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout=90)
    finally:
        for conn in connections:
            conn.close()
    assert [answer[:12] for answer in answers] == [b"HTTP/1.1 200"] * 400


def test_the_port_answers_normally_after_all_of_it(sfn: Any, machine: str) -> None:
    arn = sfn.start_execution(stateMachineArn=machine, input=pipeline_input(3))["executionArn"]
    assert json.loads(wait_done(sfn, arn)["output"]) == {"value": 6}
