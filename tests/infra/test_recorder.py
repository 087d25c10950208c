"""The recorder as synthesized: its rule on the default bus matches status changes of this
stack's workflow executions only and invokes the function, which runs beside the database and
knows the step functions' deployed names; what cannot be delivered or recorded is kept and
alarmed."""

from __future__ import annotations

import json
from typing import Any

from infra.constructs.recorder import MAX_PATTERN_CHARS, event_pattern
from switchyard.constants import DATABASE_SECRET_ARN_ENV, RECORDER_FUNCTIONS_ENV
from switchyard.records import STEP_FUNCTIONS
from switchyard.records.recorder import function_names
from tests.infra.iam import AwsValues
from tests.infra.synth import Synthesized

BASE = "arn:aws:states:us-east-1:123456789012:execution:"


def _recorder(platform: Synthesized) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (logical_id, resource["Properties"])
        for logical_id, resource in platform.resources("AWS::Lambda::Function").items()
        if {"Key": "switchyard:function", "Value": "recorder"}
        in resource["Properties"].get("Tags", [])
    ]
    return found


def _rule(platform: Synthesized) -> dict[str, Any]:
    (rule,) = [
        r["Properties"]
        for r in platform.resources("AWS::Events::Rule").values()
        if "recorder" in r["Properties"].get("Description", "")
    ]
    return rule


def test_the_rule_matches_this_stacks_workflow_executions_on_the_default_bus(
    platform: Synthesized,
) -> None:
    values = AwsValues(platform)
    rule = _rule(platform)
    assert "EventBusName" not in rule  # Step Functions sends to the default bus only
    pattern = values.resolve(rule["EventPattern"])
    assert pattern["source"] == ["aws.states"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    prefixes = sorted(p["prefix"] for p in pattern["detail"]["executionArn"])
    workflows = ("content-moderation", "customer-support", "document-processing")
    for workflow in workflows:
        assert f"{BASE}Switchyard-{workflow}:" in prefixes
    assert all(p.endswith(":") for p in prefixes)  # a machine's own executions, no other's
    assert len(json.dumps(pattern)) <= MAX_PATTERN_CHARS


def test_the_rule_invokes_the_recorder_and_keeps_what_it_cannot_deliver(
    platform: Synthesized,
) -> None:
    values = AwsValues(platform)
    logical_id, _ = _recorder(platform)
    (target,) = _rule(platform)["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    assert target["RetryPolicy"]["MaximumEventAgeInSeconds"] == 86400
    queue = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
    (permission,) = [
        p["Properties"]
        for p in platform.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
        and p["Properties"]["FunctionName"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    ]
    assert values.resolve(permission["SourceArn"]).startswith("arn:aws:events:us-east-1:")
    (invoke_config,) = platform.resources("AWS::Lambda::EventInvokeConfig").values()
    failure = invoke_config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]
    assert failure == {"Fn::GetAtt": [queue, "Arn"]}
    assert invoke_config["Properties"]["MaximumRetryAttempts"] == 2
    alarms = [
        a["Properties"]
        for a in platform.resources("AWS::CloudWatch::Alarm").values()
        if queue in json.dumps(a["Properties"].get("Metrics", []))
    ]
    assert alarms, "no alarm on the recorder's dead-letter queue"


def test_the_recorder_runs_beside_the_database_and_knows_the_step_functions(
    platform: Synthesized,
) -> None:
    values = AwsValues(platform)
    _, properties = _recorder(platform)
    assert "VpcConfig" in properties
    env = properties["Environment"]["Variables"]
    assert DATABASE_SECRET_ARN_ENV in env
    names = function_names(
        {RECORDER_FUNCTIONS_ENV: str(values.resolve(env[RECORDER_FUNCTIONS_ENV]))}
    )
    assert sorted(names.values()) == sorted(STEP_FUNCTIONS)
    deployed = {}
    for logical_id, r in platform.resources("AWS::Lambda::Function").items():
        tags = {t["Key"]: t["Value"] for t in r["Properties"].get("Tags", [])}
        if "/" not in logical_id and "switchyard:function" in tags:  # the platform's own
            name = str(values.attribute("Switchyard", logical_id, "Ref"))
            deployed[name] = tags["switchyard:function"]
    assert {name: deployed[name] for name in names} == names


def test_past_the_pattern_limit_the_rule_names_the_stacks_machine_prefix() -> None:
    few = event_pattern(BASE, [f"Switchyard-w{i}" for i in range(3)], "Switchyard")
    assert len(few["detail"]["executionArn"]) == 3  # type: ignore[index]
    many = event_pattern(BASE, [f"Switchyard-workflow-{i}" for i in range(40)], "Switchyard")
    assert many["detail"] == {"executionArn": [{"prefix": f"{BASE}Switchyard-"}]}
