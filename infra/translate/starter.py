"""The EXPRESS "starter" state machine of a schedule, event or queue trigger.

EventBridge rules, Scheduler and Pipes can start a state machine but cannot choose the execution
name, and the name is what makes a start idempotent. So each such trigger starts a tiny EXPRESS
machine (no function code) that derives the run's name from the delivery's own id and starts the
workflow's `live` alias with the trigger's input:

    name = <prefix>-SHA256("<trigger key>:<delivery id>")

- event: the EventBridge event `id` (the same across EventBridge's retries of one event);
- schedule: the scheduled time (the same across Scheduler's retries of one firing);
- queue: the SQS `messageId` (the same across redeliveries of one message).

Step Functions refuses a second execution of a name (`ExecutionAlreadyExists`): the starter ends in
"duplicate" and nothing runs twice. Any other failure goes to the trigger's dead-letter queue
(event, schedule: their services only see the asynchronous start) or fails the starter so that
Pipes leaves the message on its queue, whose redrive policy moves it to the dead-letter queue
(queue).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from infra.translate.input_paths import TranslatedInput, jsonpath, translate_input

WORKFLOW_ARN = "${WorkflowArn}"
DEAD_LETTER_QUEUE_URL = "${DeadLetterQueueUrl}"
STARTED_KEY = "switchyard"
"""Where the starter keeps what it computed, beside the delivery it got."""
ALREADY_EXISTS = [
    "StepFunctions.ExecutionAlreadyExistsException",
    "StepFunctions.ExecutionAlreadyExists",
]

TriggerKind = Literal["event", "schedule", "queue"]
_ROOT: dict[str, str] = {"event": "event", "schedule": "schedule", "queue": "message"}
_PREFIX: dict[str, str] = {"event": "ev", "schedule": "sc", "queue": "q"}
_DELIVERY_ID: dict[str, str] = {"event": "$.id", "schedule": "$.time", "queue": "$.message.id"}

SCHEDULER_INPUT = {
    "time": "<aws.scheduler.scheduled-time>",
    "schedule_arn": "<aws.scheduler.schedule-arn>",
    "execution_id": "<aws.scheduler.execution-id>",
    "attempt": "<aws.scheduler.attempt-number>",
}
"""What Scheduler sends the starter; trigger templates read it as `schedule.time`, ..."""


@dataclass(frozen=True)
class StarterSpec:
    workflow: str
    trigger_key: str
    """Unique per trigger (`<workflow>-<kind>-<index>`): part of the hashed name."""
    kind: TriggerKind
    input: dict[str, Any] = field(default_factory=dict)


def execution_name(spec: StarterSpec, delivery_id: str) -> str:
    """What the starter computes, in Python (tests and docs)."""
    digest = hashlib.sha256(f"{spec.trigger_key}:{delivery_id}".encode()).hexdigest()
    return f"{_PREFIX[spec.kind]}-{digest}"


def _base(spec: StarterSpec) -> str:
    return "$.message" if spec.kind == "queue" else "$"


def _translated(spec: StarterSpec) -> TranslatedInput:
    return translate_input(spec.input, root=_ROOT[spec.kind], base=_base(spec))


def _input_check(spec: StarterSpec, translated: TranslatedInput, on_failure: str) -> dict[str, Any]:
    """A missing path fails a Pass state with States.Runtime, which no Catch catches: check
    first, so a delivery without what the trigger reads goes where failures go."""
    variables = [_DELIVERY_ID[spec.kind]]
    for path in translated.paths:
        variable = jsonpath(_base(spec), path)
        if variable not in variables:
            variables.append(variable)
    rules = [{"Variable": v, "IsPresent": True} for v in variables]
    rule: dict[str, Any] = rules[0] if len(rules) == 1 else {"And": rules}
    return {
        "check input": {
            "Type": "Choice",
            "Comment": "every path the run's name and input read is present",
            "Choices": [{**rule, "Next": "run input"}],
            "Default": "input missing",
        },
        "input missing": {
            "Type": "Pass",
            "Result": {
                "Error": "TriggerInputMissing",
                "Cause": f"the delivery lacks a field that trigger {spec.trigger_key} reads: "
                + ", ".join(variables),
            },
            "ResultPath": "$.error",
            "Next": on_failure,
        },
    }


def _queue_states(body_is_json: bool) -> dict[str, Any]:
    """Pipes delivers a batch (a list) of SQS records; the pipe's batch size is 1."""
    body = "States.StringToJson($.body)" if body_is_json else "$.body"
    return {
        "record or batch": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.messageId", "IsPresent": True, "Next": "message"}],
            "Default": "first record of the batch",
        },
        "first record of the batch": {"Type": "Pass", "InputPath": "$[0]", "Next": "message"},
        "message": {
            "Type": "Pass",
            "Parameters": {
                "message": {
                    "id.$": "$.messageId",
                    "body.$": body,
                    "attributes.$": "$.attributes",
                    "message_attributes.$": "$.messageAttributes",
                }
            },
            "Next": "check input",
        },
    }


def starter_definition(spec: StarterSpec) -> dict[str, Any]:
    """The starter's ASL, with `${WorkflowArn}` and `${DeadLetterQueueUrl}` to substitute."""
    translated = _translated(spec)
    body_is_json = any(len(p) > 1 and p[0] == "body" for p in translated.paths)
    name = (
        f"States.Format('{_PREFIX[spec.kind]}-{{}}', States.Hash(States.Format("
        f"'{spec.trigger_key}:{{}}', {_DELIVERY_ID[spec.kind]}), 'SHA-256'))"
    )
    on_failure = "failed" if spec.kind == "queue" else "dead letter"
    states: dict[str, Any] = {}
    start_at = "check input"
    if spec.kind == "queue":
        states.update(_queue_states(body_is_json))
        start_at = "record or batch"
    states.update(_input_check(spec, translated, on_failure))
    states["run input"] = {
        "Type": "Pass",
        "Comment": "the run's name from the delivery id; its input from the trigger's templates",
        "Parameters": {"name.$": name, "input": translated.parameters},
        "ResultPath": f"$.{STARTED_KEY}",
        "Next": "start run",
    }
    states["start run"] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::states:startExecution",
        "Parameters": {
            "StateMachineArn": WORKFLOW_ARN,
            "Name.$": f"$.{STARTED_KEY}.name",
            "Input.$": f"$.{STARTED_KEY}.input",
        },
        "ResultSelector": {"execution_arn.$": "$.ExecutionArn"},
        "ResultPath": f"$.{STARTED_KEY}.started",
        "Retry": [
            {"ErrorEquals": ALREADY_EXISTS, "MaxAttempts": 0},
            {
                "ErrorEquals": ["States.ALL"],
                "IntervalSeconds": 1,
                "MaxAttempts": 4,
                "BackoffRate": 2.0,
                "JitterStrategy": "FULL",
            },
        ],
        "Catch": [
            {"ErrorEquals": ALREADY_EXISTS, "ResultPath": None, "Next": "duplicate"},
            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": on_failure},
        ],
        "Next": "started",
    }
    states["started"] = {"Type": "Succeed"}
    states["duplicate"] = {
        "Type": "Succeed",
        "Comment": "this delivery already started its run: nothing runs twice",
    }
    if spec.kind != "queue":
        states["dead letter"] = {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": DEAD_LETTER_QUEUE_URL, "MessageBody.$": "$"},
            "ResultPath": None,
            "Next": "failed",
        }
    states["failed"] = {
        "Type": "Fail",
        "Error": "TriggerStartFailed",
        "Cause": f"could not start workflow {spec.workflow}",
    }
    return {
        "Comment": f"starts workflow {spec.workflow} for trigger {spec.trigger_key} "
        f"({spec.kind}); the run's name comes from the delivery id, so a repeat starts nothing",
        "StartAt": start_at,
        "States": states,
    }
