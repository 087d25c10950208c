"""Trigger starters, as synthesized, on moto: one run per delivery, however often it arrives."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import boto3
import pytest

from infra.constructs.workflow_machine import PARTITION
from infra.translate.starter import StarterSpec, execution_name
from tests.infra.resolve import machines_by_workflow, properties_of
from tests.infra.synth import Synthesized
from tests.scenarios.harness.moto_runner import REGION, ROLE, moto_step_functions
from tests.scenarios.harness.scripted import ScriptedFunctions

QUICK = json.dumps({"StartAt": "done", "States": {"done": {"Type": "Pass", "End": True}}})
SLOW = json.dumps(
    {"StartAt": "wait", "States": {"wait": {"Type": "Wait", "Seconds": 2, "End": True}}}
)


def _finish(sfn: Any, execution: str) -> dict[str, Any]:
    for _ in range(400):
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return dict(described)
        time.sleep(0.02)
    raise TimeoutError(execution)


def _starter_text(platform: Synthesized, key: str, workflow_arn: str, dlq_url: str) -> str:
    starter = properties_of(platform, machines_by_workflow(platform, kind="EXPRESS")[key])
    text = str(starter["DefinitionString"])
    for name in starter["DefinitionSubstitutions"]:
        value = {"WorkflowArn": workflow_arn, "DeadLetterQueueUrl": dlq_url, PARTITION: "aws"}[name]
        text = text.replace("${" + name + "}", value)
    assert "${" not in text
    return text


def _run(sfn: Any, starter: str, delivery: Any) -> dict[str, Any]:
    execution = sfn.start_execution(
        stateMachineArn=starter, name=uuid.uuid4().hex, input=json.dumps(delivery)
    )
    return _finish(sfn, execution["executionArn"])


@pytest.fixture
def aws() -> Any:
    with moto_step_functions(ScriptedFunctions({})) as sfn:
        yield sfn


def _setup(aws: Any, platform: Synthesized, key: str, workflow: str) -> tuple[str, str, str]:
    sqs = boto3.client("sqs", region_name=REGION)
    dlq = sqs.create_queue(QueueName=f"{key}-dlq")["QueueUrl"]
    target = aws.create_state_machine(name="trigger-showcase", definition=workflow, roleArn=ROLE)
    starter = aws.create_state_machine(
        name=key,
        definition=_starter_text(platform, key, target["stateMachineArn"], dlq),
        roleArn=ROLE,
    )
    return target["stateMachineArn"], starter["stateMachineArn"], dlq


EVENT = {
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "source": "shop.tickets",
    "detail-type": "TicketCreated",
    "detail": {"id": "T-7", "text": "printer on fire"},
}


def test_an_event_starts_one_run_named_after_its_id_with_the_trigger_input(
    aws: Any, platform: Synthesized
) -> None:
    target, starter, _ = _setup(aws, platform, "trigger-showcase-event-1", QUICK)
    first = _run(aws, starter, EVENT)
    assert first["status"] == "SUCCEEDED"
    (run,) = aws.list_executions(stateMachineArn=target)["executions"]
    spec = StarterSpec("trigger-showcase", "trigger-showcase-event-1", "event")
    assert run["name"] == execution_name(spec, EVENT["id"])
    assert json.loads(aws.describe_execution(executionArn=run["executionArn"])["input"]) == {
        "ticket_id": "T-7",
        "text": "Ticket: printer on fire",
    }
    _finish(aws, run["executionArn"])
    again = _run(aws, starter, EVENT)  # EventBridge delivers the same event again
    assert again["status"] == "SUCCEEDED"
    assert len(aws.list_executions(stateMachineArn=target)["executions"]) == 1
    history = aws.get_execution_history(executionArn=again["executionArn"])["events"]
    entered = [
        e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e
    ]
    assert entered[-1] == "duplicate"


def test_a_redelivery_while_the_run_is_going_starts_nothing_either(
    aws: Any, platform: Synthesized
) -> None:
    target, starter, _ = _setup(aws, platform, "trigger-showcase-event-1", SLOW)
    assert _run(aws, starter, EVENT)["status"] == "SUCCEEDED"
    assert _run(aws, starter, EVENT)["status"] == "SUCCEEDED"
    assert len(aws.list_executions(stateMachineArn=target)["executions"]) == 1


def test_a_queue_message_starts_one_run_from_its_json_body(aws: Any, platform: Synthesized) -> None:
    target, starter, _ = _setup(aws, platform, "trigger-showcase-queue-2", QUICK)
    batch = [
        {
            "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
            "body": json.dumps({"id": "T-9", "text": "refund please"}),
            "attributes": {"ApproximateReceiveCount": "1"},
            "messageAttributes": {},
        }
    ]
    assert _run(aws, starter, batch)["status"] == "SUCCEEDED"
    assert _run(aws, starter, batch)["status"] == "SUCCEEDED"  # redelivered
    (run,) = aws.list_executions(stateMachineArn=target)["executions"]
    assert run["name"].startswith("q-")
    assert json.loads(aws.describe_execution(executionArn=run["executionArn"])["input"]) == {
        "ticket_id": "T-9",
        "text": "refund please",
    }


def test_a_schedule_firing_is_named_after_its_scheduled_time(
    aws: Any, platform: Synthesized
) -> None:
    target, starter, _ = _setup(aws, platform, "trigger-showcase-schedule-0", QUICK)
    firing = {
        "time": "2026-12-01T07:30:00Z",
        "schedule_arn": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/a",
        "execution_id": "x",
        "attempt": "1",
    }
    assert _run(aws, starter, firing)["status"] == "SUCCEEDED"
    # The other schedule of the split cron fires at the same instant: still one run.
    assert _run(aws, starter, {**firing, "schedule_arn": "…/b"})["status"] == "SUCCEEDED"
    (run,) = aws.list_executions(stateMachineArn=target)["executions"]
    spec = StarterSpec("trigger-showcase", "trigger-showcase-schedule-0", "schedule")
    assert run["name"] == execution_name(spec, firing["time"])
    assert json.loads(aws.describe_execution(executionArn=run["executionArn"])["input"]) == {
        "ticket_id": "daily-2026-12-01T07:30:00Z"
    }


def test_an_event_that_cannot_start_a_run_goes_to_the_dead_letter_queue(
    aws: Any, platform: Synthesized
) -> None:
    _, starter, dlq = _setup(aws, platform, "trigger-showcase-event-1", QUICK)
    broken = {**EVENT, "detail": {"text": "no id"}}  # the template's path is missing
    assert _run(aws, starter, broken)["status"] == "FAILED"
    messages = boto3.client("sqs", region_name=REGION).receive_message(QueueUrl=dlq)["Messages"]
    kept = json.loads(messages[0]["Body"])
    assert kept["detail"] == {"text": "no id"}
    assert kept["error"]["Error"] == "TriggerInputMissing"
