"""The test bed: in-process functions the machines call, the machines themselves, and an engine
serving the Step Functions API on a free port, with boto3 clients pointed at it."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from switchyard.engine.api import SfnApiServer, sfn_api_in_thread
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.local.stack import local_engine

ROLE = "arn:aws:iam::000000000000:role/test"
CREDENTIALS = {"aws_access_key_id": "x", "aws_secret_access_key": "x", "region_name": "us-east-1"}

# Pass → Choice → Wait → Task (lambda:invoke of "double"); the "flaky" route fails its first call.
PIPELINE = {
    "Comment": "Pass, Choice, Wait and Task",
    "StartAt": "Prepare",
    "States": {
        "Prepare": {
            "Type": "Pass",
            "Parameters": {"value.$": "$.value", "delay.$": "$.delay", "route.$": "$.route"},
            "Next": "Route",
        },
        "Route": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.route", "StringEquals": "flaky", "Next": "Flaky"}],
            "Default": "Settle",
        },
        "Settle": {"Type": "Wait", "SecondsPath": "$.delay", "Next": "Double"},
        "Flaky": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {
                "FunctionName": "flaky",
                "Payload": {"key.$": "$$.Execution.Name", "value.$": "$.value"},
            },
            "ResultSelector": {"value.$": "$.Payload.value"},
            "Next": "Double",
        },
        "Double": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "double", "Payload": {"value.$": "$.value"}},
            "ResultSelector": {"value.$": "$.Payload.value"},
            "End": True,
        },
    },
}

# A task that waits for its token: "hold" hands the token to the test, which calls back.
CALLBACK = {
    "StartAt": "Ask",
    "States": {
        "Ask": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {
                "FunctionName": "hold",
                "Payload": {"token.$": "$$.Task.Token", "key.$": "$$.Execution.Name"},
            },
            "HeartbeatSeconds": 600,
            "End": True,
        }
    },
}


def pipeline_input(value: int, *, delay: int = 0, route: str = "plain") -> str:
    return json.dumps({"value": value, "delay": delay, "route": route})


class FlakyError(Exception):
    pass


@dataclass
class Functions:
    """What the machines' tasks call, in-process; the tokens "hold" received, by execution."""

    tokens: dict[str, str] = field(default_factory=dict)
    failed_once: set[str] = field(default_factory=set)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def registry(self) -> FunctionRegistry:
        registry = FunctionRegistry()
        registry.register("double", lambda event, context: {"value": event["value"] * 2})
        registry.register("flaky", self._flaky)
        registry.register("hold", self._hold)
        return registry

    def _flaky(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        if event["key"] not in self.failed_once:
            self.failed_once.add(event["key"])
            raise FlakyError(f"first call for {event['key']} fails")
        return {"value": event["value"]}

    def _hold(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        with self._changed:
            self.tokens[event["key"]] = event["token"]
            self._changed.notify_all()
        return {"accepted": True}

    def token(self, execution_name: str, timeout: float = 10.0) -> str:
        with self._changed:
            if not self._changed.wait_for(lambda: execution_name in self.tokens, timeout):
                raise AssertionError(f"no task token for {execution_name} in {timeout} s")
            return self.tokens[execution_name]


@dataclass
class Endpoint:
    engine: Engine
    server: SfnApiServer
    functions: Functions

    @property
    def url(self) -> str:
        return self.server.endpoint_url

    def client(self, *, validate: bool = True) -> Any:
        """A boto3 client that checks every answer against the service model's output shape;
        `validate=False` sends what botocore would refuse, so the server's own checks answer."""
        config = Config(retries={"total_max_attempts": 1}, parameter_validation=validate)
        client = boto3.client("stepfunctions", endpoint_url=self.url, config=config, **CREDENTIALS)
        client.meta.events.register("before-parse.sfn.*", _check_answer)
        return client


def _check_answer(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
    """A successful answer has only members of the output shape, its required members, and
    JSON types that fit (botocore would silently drop or misread anything else)."""
    if response_dict["status_code"] == 200:
        body = json.loads(response_dict["body"] or b"{}")
        _check_shape(operation_model.output_shape, body, operation_model.name)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "long": (int,),
    "timestamp": (int, float),
    "structure": (dict,),
    "map": (dict,),
    "list": (list,),
}


def _check_shape(shape: Any, value: Any, path: str) -> None:
    expected = _JSON_TYPES[shape.type_name]
    assert isinstance(value, expected), f"{path}: {value!r} is not a {shape.type_name}"
    assert not (isinstance(value, bool) and shape.type_name != "boolean"), path
    if shape.type_name == "structure":
        assert set(value) <= set(shape.members), f"{path}: {set(value) - set(shape.members)}"
        missing = [m for m in shape.required_members if m not in value]
        assert not missing, f"{path}: required {missing} missing"
        for name, item in value.items():
            _check_shape(shape.members[name], item, f"{path}.{name}")
    elif shape.type_name == "list":
        for index, item in enumerate(value):
            _check_shape(shape.member, item, f"{path}[{index}]")
    elif shape.type_name == "string" and shape.enum:
        assert value in shape.enum, f"{path}: {value!r} not in {shape.enum}"


@contextmanager
def start_endpoint(conninfo: str) -> Iterator[Endpoint]:
    functions = Functions()
    engine = local_engine(conninfo, registry=functions.registry(), workers=4)
    engine.start()
    try:
        with sfn_api_in_thread(engine) as server:
            yield Endpoint(engine, server, functions)
    finally:
        engine.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_machine(sfn: Any, definition: dict[str, Any], prefix: str = "m", **extra: Any) -> str:
    created = sfn.create_state_machine(
        name=unique(prefix), definition=json.dumps(definition), roleArn=ROLE, **extra
    )
    return str(created["stateMachineArn"])


def wait_done(sfn: Any, execution_arn: str, timeout: float = 15.0) -> dict[str, Any]:
    """DescribeExecution once the execution has left RUNNING."""
    deadline = time.monotonic() + timeout
    while True:
        described: dict[str, Any] = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return described
        if time.monotonic() > deadline:
            raise AssertionError(f"{execution_arn} still RUNNING after {timeout} s")
        time.sleep(0.02)


def wait_for_state(sfn: Any, execution_arn: str, event_type: str, timeout: float = 15.0) -> None:
    """Until the execution's history has an event of `event_type`."""
    deadline = time.monotonic() + timeout
    while True:
        events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
        if any(event["type"] == event_type for event in events):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"no {event_type} in {execution_arn} after {timeout} s")
        time.sleep(0.02)
