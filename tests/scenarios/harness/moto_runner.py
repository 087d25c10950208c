"""Run a scenario on moto's Step Functions interpreter (ported from LocalStack; not ours).

Lambda invocations are routed to the scenario's scripted functions (or to any `StepFunctions`,
e.g. the real handlers in tests/e2e), and three casing bugs of moto's `startExecution.sync:2`
integration are patched so that child executions run (the parameters go to boto3 in camelCase,
the responses come back in PascalCase as on AWS). moto's Choice `Timestamp*` rules read only
`2026-01-31T12:00:00Z`, not the fractional seconds and offsets that AWS accepts (and that moto
itself writes into `$$.State.EnteredTime`), so they read RFC 3339 as AWS does. And moto wraps
the value of any path below an array index in a list (`$[0].a` gives `[1]` for `[{"a": 1}]`,
`moto/stepfunctions/parser/asl/utils/json_path.py`), where AWS reads the one value a path of
names and indexes leads to (as a Parallel's `ResultSelector` does to gather its branches'
records); `Parameters` and `ResultSelector` read such a path as AWS does.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import Any, Protocol
from unittest import mock

import boto3
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.stepfunctions.parser.asl.component.common.string import string_expression
from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.is_operator import (  # noqa: E501
    IsTimestamp,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sfn as sfn_service,
)
from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

from switchyard.compile import compile_workflow
from switchyard.contract import (
    FUNCTIONS,
    GateKind,
    function_placeholder,
    state_machine_placeholder,
)
from switchyard.engine.asl.timestamps import parse_timestamp
from switchyard.model import Workflow
from tests.scenarios.harness.outcome import STATUS, Outcome, records_from_history
from tests.scenarios.harness.scenario import Scenario
from tests.scenarios.harness.scripted import OpenGate, ScriptedFunctions

REGION = "us-east-1"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/switchyard-test"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{{}}"
DEADLINE_SECONDS = 90
_DEFINITE_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]")


class StepFunctions(Protocol):
    """The functions behind moto's Lambda: a failure raises, named by its error type."""

    def invoke(self, function: str, payload: dict[str, Any]) -> Any: ...


def function_arns() -> dict[str, str]:
    return {function_placeholder(f): FUNCTION_ARN.format(f.value) for f in FUNCTIONS}


def substitute(text: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def _pascal(key: str) -> str:
    return key[:1].upper() + key[1:]


def _camel(key: str) -> str:
    return key[:1].lower() + key[1:]


@contextmanager
def moto_step_functions(functions: StepFunctions) -> Iterator[Any]:
    """moto with executing state machines, our functions behind Lambda, sync:2 children and
    timestamp comparisons fixed."""

    def invoke(
        self: Any,
        function_name: str,
        qualifier: Any,
        body: Any,
        headers: Any,
        response_headers: dict[str, str],
    ) -> bytes:
        name = function_name.rsplit(":", 1)[-1]
        payload = json.loads(body) if body else {}
        try:
            result = functions.invoke(name, payload)
        except Exception as exc:  # a failed invocation, reported as Lambda does
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}).encode()
        return json.dumps(result).encode()

    original_parameters = sfn_service.StateTaskServiceSfn._normalise_parameters
    original_eval = sfn_service.StateTaskServiceSfn._eval_service_task

    def normalise_parameters(
        self: Any,
        parameters: dict[str, Any],
        boto_service_name: Any = None,
        service_action_name: Any = None,
    ) -> None:
        original_parameters(self, parameters, boto_service_name, service_action_name)
        if service_action_name is None:
            for key in list(parameters):
                parameters[_camel(key)] = parameters.pop(key)

    def eval_service_task(self: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        original_eval(self, env, *args, **kwargs)
        response = env.stack.pop()
        env.stack.append({_pascal(k): v for k, v in response.items()})

    def normalise_response(
        self: Any, response: Any, boto_service_name: Any = None, service_action_name: Any = None
    ) -> None:
        if isinstance(response, dict):
            for key in list(response):
                response[_pascal(key)] = response.pop(key)

    config = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    with ExitStack() as stack:
        stack.enter_context(mock_aws(config=config))
        stack.enter_context(mock.patch.object(LambdaSimpleBackend, "invoke", invoke))
        service = sfn_service.StateTaskServiceSfn
        stack.enter_context(
            mock.patch.object(service, "_normalise_parameters", normalise_parameters)
        )
        stack.enter_context(mock.patch.object(service, "_eval_service_task", eval_service_task))
        stack.enter_context(mock.patch.object(service, "_normalise_response", normalise_response))
        stack.enter_context(
            mock.patch.object(IsTimestamp, "string_to_timestamp", staticmethod(rfc3339))
        )
        moto_extract = getattr(string_expression, "extract_json")  # noqa: B009 (not exported)

        def extract_json(path: str, data: Any) -> Any:
            return _read(path, data, moto_extract)

        stack.enter_context(mock.patch.object(string_expression, "extract_json", extract_json))
        yield boto3.client("stepfunctions", region_name=REGION)


def _read(path: str, data: Any, moto_extract: Any) -> Any:
    """A path of names and array indexes (`$[0].a`, `$.x[1].y`) read as AWS reads it: the one
    value it leads to; any other path as moto reads it."""
    steps = list(_DEFINITE_STEP.finditer(path, 1))
    if not path.startswith("$") or "".join(m.group(0) for m in steps) != path[1:]:
        return moto_extract(path, data)
    if not any(m.group(2) for m in steps[:-1]):  # no index before the end: moto reads it right
        return moto_extract(path, data)
    value = data
    for match in steps:
        name, index = match.group(1), match.group(2)
        if name is not None and isinstance(value, dict) and name in value:
            value = value[name]
        elif index is not None and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            raise NoSuchJsonPathError(json_path=path, data=data)
    return value


def rfc3339(text: str) -> datetime | None:
    """A timestamp as Step Functions reads one in a Choice rule (RFC 3339, UTC)."""
    parsed = parse_timestamp(text)
    return None if parsed is None else parsed.moment


def create_machines(
    sfn: Any,
    scenario_workflows: list[Workflow],
    parent: Workflow,
    definitions: dict[str, str] | None = None,
) -> str:
    """Create the children and the parent; return the parent's ARN."""
    sqs = boto3.client("sqs", region_name=REGION)
    values = function_arns()
    values["${DeadLetterQueueUrl}"] = sqs.create_queue(QueueName="switchyard-dead-letters")[
        "QueueUrl"
    ]
    for child in scenario_workflows:
        text = (definitions or {}).get(child.name) or compile_workflow(child).text
        arn = sfn.create_state_machine(
            name=child.name, definition=substitute(text, values), roleArn=ROLE
        )["stateMachineArn"]
        values[state_machine_placeholder(child.name, None)] = arn
        values[state_machine_placeholder(child.name, child.version)] = arn
    text = (definitions or {}).get(parent.name) or compile_workflow(parent).text
    definition = substitute(text, values)
    assert "${" not in definition, f"unfilled placeholders in {parent.name}"
    return str(
        sfn.create_state_machine(name=parent.name, definition=definition, roleArn=ROLE)[
            "stateMachineArn"
        ]
    )


def run_on_moto(scenario: Scenario, *, definitions: dict[str, str] | None = None) -> Outcome:
    """Run the scenario to its end on moto and report what happened."""
    functions = ScriptedFunctions(scenario.script)
    with moto_step_functions(functions) as sfn:
        arn = create_machines(sfn, scenario.children, scenario.workflow, definitions)
        execution = sfn.start_execution(
            stateMachineArn=arn, name=f"run-{scenario.name}", input=json.dumps(scenario.input)
        )["executionArn"]
        described = _drive(sfn, execution, functions, scenario)
        events = execution_history(sfn, execution)
        letters = _dead_letters()
    steps, entered = records_from_history(events)
    output = json.loads(described["output"]) if described.get("output") else None
    return Outcome(
        status=STATUS[described["status"]],
        output=output,
        error=described.get("error"),
        cause=described.get("cause"),
        steps=steps,
        calls=dict(functions.calls),
        states_entered=entered,
        dead_letters=[letter["step_id"] for letter in letters],
        letters=letters,
    )


def _drive(
    sfn: Any, execution: str, functions: ScriptedFunctions, scenario: Scenario
) -> dict[str, Any]:
    """Poll until the execution ends, deciding gates as the scenario says."""
    actions = {step_id: list(entries) for step_id, entries in scenario.gates.items()}
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        for gate in list(functions.gates):
            if not gate.handled:
                gate.handled = True
                _decide(sfn, execution, gate, actions)
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return dict(described)
        time.sleep(0.02)
    raise TimeoutError(f"scenario {scenario.name} did not finish in {DEADLINE_SECONDS} s")


def decision_output(gate: OpenGate, action: dict[str, Any]) -> dict[str, Any]:
    return {
        "decision": "approved",
        "reviewer": action.get("reviewer", "reviewer@example.com"),
        "note": action.get("note"),
        "edits": action.get("edits", {}),
        "decided_at": "2026-11-29T12:00:00Z",
        "tier": gate.request.tier,
    }


def tool_call_answer(action: dict[str, Any]) -> dict[str, Any]:
    """What `gates.decide` sends to a `human` gate, approved or rejected alike: the step runs
    again and its runtime reads the decision recorded for the tool call (the script plays it)."""
    decision = "approved" if action["action"] == "approve" else "rejected"
    return {"decision": decision, "reviewer": action.get("reviewer", "reviewer@example.com")}


def _decide(
    sfn: Any, execution: str, gate: OpenGate, actions: dict[str, list[dict[str, Any]]]
) -> None:
    queue = actions.get(gate.request.step_id) or []
    if not queue:
        raise AssertionError(
            f"gate at {gate.request.step_id} ({gate.request.kind}) opened, "
            "but the scenario has no action for it"
        )
    action = queue.pop(0)
    kind = action["action"]
    if gate.request.kind is GateKind.HUMAN and kind in ("approve", "reject"):
        sfn.send_task_success(taskToken=gate.token, output=json.dumps(tool_call_answer(action)))
    elif kind == "approve":
        sfn.send_task_success(
            taskToken=gate.token, output=json.dumps(decision_output(gate, action))
        )
    elif kind == "reject":
        cause = {
            "reviewer": action.get("reviewer", "reviewer@example.com"),
            "note": action.get("note"),
        }
        sfn.send_task_failure(taskToken=gate.token, error="rejected", cause=json.dumps(cause))
    elif kind == "resume":
        sfn.send_task_success(taskToken=gate.token, output=json.dumps({"resumed": True}))
    elif kind == "cancel":
        sfn.stop_execution(
            executionArn=execution, error="cancelled", cause="cancelled by the scenario"
        )
        # moto deviation: a stopped execution stays blocked on its task token until the token
        # is answered (AWS ends it at once); answering it lets moto see the stop.
        sfn.send_task_success(taskToken=gate.token, output=json.dumps({"stopped": True}))
    elif kind != "timeout":
        raise AssertionError(f"unknown gate action {kind}")


def _dead_letters() -> list[dict[str, Any]]:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.get_queue_url(QueueName="switchyard-dead-letters")["QueueUrl"]
    letters: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return letters
        letters += [json.loads(m["Body"]) for m in messages]


def execution_history(sfn: Any, execution: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = sfn.get_execution_history(
            executionArn=execution, maxResults=1000, **({"nextToken": token} if token else {})
        )
        events += page["events"]
        token = page.get("nextToken")
        if not token:
            return events
