"""The synthesized platform: every resource family, checked on the template CloudFormation gets."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.constructs.workflow_machine import PARTITION
from switchyard.constants import (
    API_KEY_SECRET_ENV,
    BUDGET_TABLE_ENV,
    DATABASE_SECRET_ARN_ENV,
    FUNCTION_SPECS,
    IDEMPOTENCY_TABLE_ENV,
    OUTPUT_BUCKET_ENV,
    PLATFORM_FUNCTIONS,
    POWERTOOLS_METRICS_NAMESPACE_ENV,
    POWERTOOLS_SERVICE_NAME_ENV,
    WEBHOOK_SECRET_ENV,
    Placement,
)
from switchyard.contract import placeholders_in
from tests.infra.resolve import FakeAws, machines_by_workflow, properties_of
from tests.infra.synth import REPO, Synthesized


@pytest.fixture(scope="module")
def template(platform: Synthesized) -> Template:
    """The top-level stack: the platform."""
    return Template.from_json(platform.template)


@pytest.fixture(scope="module")
def showcase(platform: Synthesized) -> Template:
    """The trigger showcase's nested stack: its triggers are there."""
    return Template.from_json(platform.workflow_stack("trigger-showcase"))


CDK_FUNCTIONS = ("CustomCDKBucketDeployment",)
"""Functions of CDK's own (the dashboard's upload), not of `functions/`."""


def functions_by_folder(platform: Synthesized) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for logical_id, resource in platform.resources("AWS::Lambda::Function").items():
        tags = {t["Key"]: t["Value"] for t in resource["Properties"].get("Tags", [])}
        if "switchyard:function" not in tags:
            assert logical_id.startswith(CDK_FUNCTIONS), logical_id
            continue
        found.setdefault(tags["switchyard:function"], []).append(resource["Properties"])
    return found


# --- functions and layer -----------------------------------------------------------------------


def test_every_declared_function_is_deployed_on_python_313_arm64_with_tracing(
    platform: Synthesized,
) -> None:
    deployed = functions_by_folder(platform)
    assert set(deployed) == {s.name for s in FUNCTION_SPECS} | {
        "migrate",
        "webhook_trigger",
        "approval_api",
        "dashboard_api",
        "recorder",
    }
    assert len(deployed["webhook_trigger"]) == 2  # one per webhook trigger of the showcase
    for properties in (p for group in deployed.values() for p in group):
        assert properties["Runtime"] == "python3.13"
        assert properties["Architectures"] == ["arm64"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert properties["Handler"] == "handler.handler"
        assert len(properties["Layers"]) == 1
        assert "LogGroup" in properties["LoggingConfig"]
        env = properties["Environment"]["Variables"]
        tags = {t["Key"]: t["Value"] for t in properties["Tags"]}
        assert env[POWERTOOLS_SERVICE_NAME_ENV] == tags["switchyard:function"]
        assert env[POWERTOOLS_METRICS_NAMESPACE_ENV] == "switchyard"


def test_functions_follow_the_table_for_memory_timeout_concurrency_and_placement(
    platform: Synthesized,
) -> None:
    deployed = functions_by_folder(platform)
    for spec in PLATFORM_FUNCTIONS:
        assert {p["MemorySize"] for p in deployed[spec.name]} == {spec.memory_mb}, spec.name
    for spec in FUNCTION_SPECS:
        (properties,) = deployed[spec.name]
        assert properties["MemorySize"] == spec.memory_mb
        assert properties["Timeout"] == spec.timeout_seconds
        assert properties.get("ReservedConcurrentExecutions") == spec.reserved_concurrency
        assert ("VpcConfig" in properties) == (spec.placement is Placement.VPC), spec.name
        env = properties["Environment"]["Variables"]
        assert (DATABASE_SECRET_ARN_ENV in env) == spec.uses_database, spec.name
    agent = deployed["agent_step"][0]["Environment"]["Variables"]
    for name in (IDEMPOTENCY_TABLE_ENV, BUDGET_TABLE_ENV, OUTPUT_BUCKET_ENV, API_KEY_SECRET_ENV):
        assert name in agent


def _role_statements(platform: Synthesized, function: str) -> list[dict[str, Any]]:
    """Every statement of the inline policies on the role of `functions/<function>`."""
    roles = {
        json.dumps(properties["Role"]) for properties in functions_by_folder(platform)[function]
    }
    statements: list[dict[str, Any]] = []
    for policy in platform.resources("AWS::IAM::Policy").values():
        attached = {
            json.dumps({"Fn::GetAtt": [r["Ref"], "Arn"]}) for r in policy["Properties"]["Roles"]
        }
        if attached & roles:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_render_and_approval_notify_may_read_large_outputs_back_and_nothing_more(
    platform: Synthesized,
) -> None:
    """render also stores a run's outputs that do not fit its share of the state."""
    deployed = functions_by_folder(platform)
    allowed = {"render": ["s3:GetObject", "s3:PutObject"], "approval_notify": "s3:GetObject"}
    for function in ("render", "approval_notify"):
        env = deployed[function][0]["Environment"]["Variables"]
        assert OUTPUT_BUCKET_ENV in env, function
        s3 = [s for s in _role_statements(platform, function) if "s3" in json.dumps(s["Action"])]
        assert [s["Action"] for s in s3] == [allowed[function]], function
        assert "kms:Decrypt" in json.dumps(_role_statements(platform, function)), function
    for function in ("run_start", "webhook_trigger", "migrate"):
        env = deployed[function][0]["Environment"]["Variables"]
        assert OUTPUT_BUCKET_ENV not in env, function


def test_each_function_has_its_own_encrypted_log_group_with_retention(
    platform: Synthesized,
) -> None:
    functions = 0
    for template in platform.templates.values():
        resources = template["Resources"]
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::Lambda::Function":
                log_group = resource["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
                group = resources[log_group]["Properties"]  # in the function's own stack
                assert group["RetentionInDays"] == 30
                assert "KmsKeyId" in group
                functions += not logical_id.startswith(CDK_FUNCTIONS)
    assert functions == sum(len(g) for g in functions_by_folder(platform).values())


def test_the_layer_is_for_python_314_on_arm64(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {"CompatibleRuntimes": ["python3.13"], "CompatibleArchitectures": ["arm64"]},
    )


# --- state ---------------------------------------------------------------------------------------


def test_aurora_serverless_v2_scales_to_zero_encrypted_with_a_secret(template: Template) -> None:
    template.has_resource_properties(
        "AWS::RDS::DBCluster",
        {
            "Engine": "aurora-postgresql",
            "StorageEncrypted": True,
            "KmsKeyId": Match.any_value(),
            "DeletionProtection": True,
            "ServerlessV2ScalingConfiguration": {
                "MinCapacity": 0,
                "MaxCapacity": 4,
                "SecondsUntilAutoPause": 600,
            },
            "MasterUserPassword": Match.object_like(
                {"Fn::Join": Match.array_with([Match.array_with(["{{resolve:secretsmanager:"])])}
            ),
        },
    )
    template.has_resource_properties("AWS::RDS::DBInstance", {"DBInstanceClass": "db.serverless"})
    template.resource_count_is("AWS::SecretsManager::RotationSchedule", 1)


def test_migrations_run_on_deploy_through_the_migrate_function(platform: Synthesized) -> None:
    (migrations,) = platform.resources("Custom::SwitchyardSchemaMigrations").values()
    token = migrations["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    function = platform.template["Resources"][token]["Properties"]
    assert {"Key": "switchyard:function", "Value": "migrate"} in function["Tags"]
    assert len(migrations["Properties"]["MigrationsHash"]) == 64


@pytest.mark.parametrize(
    ("key", "ttl"), [("id", "expiration"), ("pk", "expires_at")], ids=["idempotency", "budget"]
)
def test_dynamodb_tables_have_the_keys_the_stores_expect(
    platform: Synthesized, key: str, ttl: str
) -> None:
    tables = [
        t["Properties"]
        for t in platform.resources("AWS::DynamoDB::Table").values()
        if t["Properties"]["KeySchema"] == [{"AttributeName": key, "KeyType": "HASH"}]
    ]
    (table,) = tables
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["SSESpecification"]["SSEType"] == "KMS"
    # The stores write these attributes (idempotency: Powertools; budget: the ledger).
    assert table["TimeToLiveSpecification"] == {"AttributeName": ttl, "Enabled": True}


def test_output_bucket_is_encrypted_private_tls_only_and_expires_objects(
    template: Template,
) -> None:
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    Match.object_like(
                        {
                            "BucketKeyEnabled": True,
                            "ServerSideEncryptionByDefault": Match.object_like(
                                {"SSEAlgorithm": "aws:kms"}
                            ),
                        }
                    )
                ]
            },
            "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
            "LifecycleConfiguration": {
                "Rules": [Match.object_like({"ExpirationInDays": 90, "Status": "Enabled"})]
            },
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_the_vpc_has_one_nat_gateway_and_free_gateway_endpoints(template: Template) -> None:
    template.resource_count_is("AWS::EC2::NatGateway", 1)
    template.resource_count_is("AWS::EC2::VPCEndpoint", 2)
    template.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway"})


# --- workflows -----------------------------------------------------------------------------------


def test_one_standard_machine_per_workflow_logging_all_without_data_and_traced(
    platform: Synthesized,
) -> None:
    machines = machines_by_workflow(platform)
    assert set(machines) == {
        "content-moderation",
        "continue-showcase",
        "customer-support",
        "document-processing",
        "summarize-document",
        "trigger-showcase",
    }
    for located in machines.values():
        machine = properties_of(platform, located)
        assert machine["StateMachineType"] == "STANDARD"
        assert machine["LoggingConfiguration"]["Level"] == "ALL"
        assert machine["LoggingConfiguration"]["IncludeExecutionData"] is False
        assert machine["TracingConfiguration"] == {"Enabled": True}


def test_each_workflow_is_a_nested_stack_of_its_own(platform: Synthesized) -> None:
    stacks = platform.resources("AWS::CloudFormation::Stack")
    assert len(stacks) == 6
    for name, (stack, _) in machines_by_workflow(platform).items():
        assert stack in stacks
        assert platform.workflow_stack(name) is platform.nested[stack]
        # Nothing of a workflow is left in the top-level stack but its nested stack.
        assert not any(
            name.title().replace("-", "") in logical_id
            for logical_id, resource in platform.template["Resources"].items()
            if resource["Type"] != "AWS::CloudFormation::Stack"
        ), name


def test_every_placeholder_has_a_substitution_and_none_is_left(platform: Synthesized) -> None:
    fake = FakeAws(platform)
    for name, located in machines_by_workflow(platform).items():
        machine = properties_of(platform, located)
        assert set(placeholders_in(machine["DefinitionString"])) == set(
            machine["DefinitionSubstitutions"]
        ), name
        # Each placeholder is a parameter of the workflow's stack, of the same name; the
        # partition of the service integrations is the stack's.
        assert machine["DefinitionSubstitutions"] == {
            p: {"Ref": "AWS::Partition" if p == PARTITION else p}
            for p in machine["DefinitionSubstitutions"]
        }
        resolved = fake.definition(located)
        assert "${" not in resolved, name
        json.loads(resolved)


def test_a_pinned_sub_workflow_resolves_to_the_childs_version_alias(
    platform: Synthesized,
) -> None:
    machines = machines_by_workflow(platform)
    parent_stack, _ = machines["document-processing"]
    child_stack, child_machine = machines["summarize-document"]
    substitution = properties_of(platform, machines["document-processing"])[
        "DefinitionSubstitutions"
    ]["SummarizeDocumentV1StateMachineArn"]
    assert substitution == {"Ref": "SummarizeDocumentV1StateMachineArn"}
    # The parent's stack gets it from an output of the child's stack ...
    passed = platform.template["Resources"][parent_stack]["Properties"]["Parameters"]
    stack, output = passed["SummarizeDocumentV1StateMachineArn"]["Fn::GetAtt"]
    assert stack == child_stack
    child = platform.nested[child_stack]
    # ... which is the child's v1 alias, on the version of the child's machine.
    alias_id = child["Outputs"][output.removeprefix("Outputs.")]["Value"]["Fn::GetAtt"][0]
    alias = child["Resources"][alias_id]["Properties"]
    assert alias["Name"] == "v1"
    version_id = alias["RoutingConfiguration"][0]["StateMachineVersionArn"]["Fn::GetAtt"][0]
    version = child["Resources"][version_id]["Properties"]
    assert version["StateMachineArn"] == {"Ref": child_machine}


def test_each_workflow_publishes_a_retained_version_and_new_runs_start_on_live(
    platform: Synthesized,
) -> None:
    pinned = []
    for name, (stack, logical_id) in machines_by_workflow(platform).items():
        resources = platform.nested[stack]["Resources"]
        (version_id,) = [
            k
            for k, v in resources.items()
            if v["Type"] == "AWS::StepFunctions::StateMachineVersion"
            and v["Properties"]["StateMachineArn"] == {"Ref": logical_id}
        ]
        version = resources[version_id]
        assert version["DeletionPolicy"] == "Retain"
        assert version["UpdateReplacePolicy"] == "Retain"
        assert version["Properties"]["StateMachineRevisionId"] == {
            "Fn::GetAtt": [logical_id, "StateMachineRevisionId"]
        }
        aliases = [
            v["Properties"]
            for v in resources.values()
            if v["Type"] == "AWS::StepFunctions::StateMachineAlias"
        ]
        routing = [{"StateMachineVersionArn": {"Fn::GetAtt": [version_id, "Arn"]}, "Weight": 100}]
        assert [a["Name"] for a in aliases if a["Name"] == "live"] == ["live"], name
        assert all(a["RoutingConfiguration"] == routing for a in aliases), name
        pinned += [f"{name}@{a['Name']}" for a in aliases if a["Name"] != "live"]
    assert pinned == ["summarize-document@v1"]


def _machine_role(platform: Synthesized, workflow: str) -> list[dict[str, Any]]:
    """The statements of a workflow machine's role."""
    template = platform.workflow_stack(workflow)
    (statements,) = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and k.startswith("MachineRole")
    ]
    return list(statements)


def _passed(platform: Synthesized, workflow: str) -> dict[str, Any]:
    """What the top-level stack passes to a workflow's stack, by parameter."""
    stack, _ = machines_by_workflow(platform)[workflow]
    passed: dict[str, Any] = platform.template["Resources"][stack]["Properties"]["Parameters"]
    return passed


def test_a_workflow_role_may_call_only_its_functions_its_child_and_its_dlq(
    platform: Synthesized,
) -> None:
    statements = _machine_role(platform, "document-processing")
    passed = _passed(platform, "document-processing")
    by_action = {json.dumps(s["Action"]): s["Resource"] for s in statements}
    invoked = by_action['"lambda:InvokeFunction"']
    parameters = sorted({r["Ref"] for r in invoked if "Ref" in r})
    assert parameters == [
        "AgentStepFunctionArn",
        "ApprovalNotifyFunctionArn",
        "RenderFunctionArn",
        "RunStartFunctionArn",
        "ToolStepFunctionArn",
    ]  # no router_step: document-processing has no LLM router
    for parameter in parameters:
        function = passed[parameter]["Fn::GetAtt"][0]
        assert function == "Functions" + parameter.removesuffix("FunctionArn") + function[-8:]
    assert by_action['"sqs:SendMessage"'] == {"Ref": "DeadLetterQueueArn"}
    assert passed["DeadLetterQueueArn"]["Fn::GetAtt"][0].startswith("WorkflowsStepDeadLetters")
    assert by_action['"states:StartExecution"'] == {"Ref": "SummarizeDocumentV1StateMachineArn"}
    describe = json.dumps(by_action['["states:DescribeExecution", "states:StopExecution"]'])
    assert ":execution:Switchyard-summarize-document:*" in describe
    rule = json.dumps(by_action['["events:PutTargets", "events:PutRule", "events:DescribeRule"]'])
    assert "rule/StepFunctionsGetEventsForStepFunctionsExecutionRule" in rule
    wildcard_actions = [
        a
        for s in statements
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        if "*" in a
    ]
    assert wildcard_actions == []


def test_a_workflow_without_children_gets_no_states_or_events_permissions(
    platform: Synthesized,
) -> None:
    actions = json.dumps([s["Action"] for s in _machine_role(platform, "customer-support")])
    assert "states:StartExecution" not in actions
    assert "events:PutRule" not in actions
    assert "RouterStepFunctionArn" not in json.dumps(_passed(platform, "customer-support"))


def test_no_policy_grants_wildcard_actions_on_data(platform: Synthesized) -> None:
    data_services = ("dynamodb:", "s3:", "sqs:", "secretsmanager:", "kms:", "states:", "lambda:")
    for logical_id, policy in platform.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in actions if isinstance(actions, list) else [actions]:
                if action.startswith(data_services):
                    assert "*" not in action, f"{logical_id}: {action}"


# --- triggers ------------------------------------------------------------------------------------


def test_schedules_translate_cron_with_timezone_and_split_or_days(showcase: Template) -> None:
    schedules = showcase.find_resources("AWS::Scheduler::Schedule")
    expressions = sorted(s["Properties"]["ScheduleExpression"] for s in schedules.values())
    assert expressions == ["cron(30 8 1 * ? *)", "cron(30 8 ? * 2-6 *)"]
    for schedule in schedules.values():
        properties = schedule["Properties"]
        assert properties["ScheduleExpressionTimezone"] == "Europe/Berlin"
        assert "<aws.scheduler.scheduled-time>" in properties["Target"]["Input"]
        assert "DeadLetterConfig" in properties["Target"]


def test_event_triggers_are_rules_on_the_stacks_bus_with_a_dlq(
    template: Template, showcase: Template
) -> None:
    template.has_resource_properties("AWS::Events::EventBus", {"Name": "Switchyard"})
    showcase.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventBusName": Match.any_value(),
            "EventPattern": {"source": ["shop.tickets"], "detail-type": ["TicketCreated"]},
            "Targets": [
                Match.object_like(
                    {"DeadLetterConfig": Match.any_value(), "RoleArn": Match.any_value()}
                )
            ],
        },
    )


def test_queue_triggers_are_pipes_from_a_queue_with_redrive(showcase: Template) -> None:
    showcase.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "QueueName": "Switchyard-tickets",
            "SqsManagedSseEnabled": True,
            "RedrivePolicy": Match.object_like({"maxReceiveCount": 5}),
        },
    )
    showcase.has_resource_properties(
        "AWS::Pipes::Pipe",
        {
            "SourceParameters": {"SqsQueueParameters": {"BatchSize": 1}},
            "TargetParameters": {
                "StepFunctionStateMachineParameters": {"InvocationType": "REQUEST_RESPONSE"}
            },
        },
    )


def test_starters_are_express_machines_that_start_the_live_alias(platform: Synthesized) -> None:
    starters = machines_by_workflow(platform, kind="EXPRESS")
    assert sorted(starters) == [
        "content-moderation-event-0",
        "trigger-showcase-event-1",
        "trigger-showcase-queue-2",
        "trigger-showcase-schedule-0",
    ]
    machines = machines_by_workflow(platform)
    for key, (stack, logical_id) in starters.items():
        assert stack == machines[key.rsplit("-", 2)[0]][0]  # in its workflow's stack
        resources = platform.nested[stack]["Resources"]
        substitutions = resources[logical_id]["Properties"]["DefinitionSubstitutions"]
        alias = resources[substitutions["WorkflowArn"]["Fn::GetAtt"][0]]
        assert alias["Properties"]["Name"] == "live"


def test_webhooks_are_unsigned_routes_to_one_verifying_function_each(
    platform: Synthesized,
) -> None:
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in platform.resources("AWS::ApiGatewayV2::Route").values()
    }
    assert routes["POST /webhooks/trigger-showcase/0"]["AuthorizationType"] == "NONE"
    assert routes["POST /webhooks/trigger-showcase/1"]["AuthorizationType"] == "NONE"
    secrets = sorted(
        json.dumps(p["Environment"]["Variables"][WEBHOOK_SECRET_ENV])
        for p in functions_by_folder(platform)["webhook_trigger"]
    )
    # env:SHOP_WEBHOOK_SECRET became a generated Secrets Manager secret; secret: stays by name.
    assert any('"secret:", {"Ref": "TriggersTriggerShowcaseWebhook3Secret' in s for s in secrets)
    assert '"secret:shop/webhook-key"' in secrets


def test_every_trigger_and_the_steps_have_a_dead_letter_queue(platform: Synthesized) -> None:
    queues = [k for k in platform.resources("AWS::SQS::Queue") if "DeadLetters" in k]
    # steps, recorder + content-moderation event + showcase schedule, event, queue, two webhooks
    assert len(queues) == 8


# --- API and monitoring -----------------------------------------------------------------------


def test_run_submission_is_iam_signed_and_goes_straight_to_step_functions(
    platform: Synthesized,
) -> None:
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in platform.resources("AWS::ApiGatewayV2::Route").values()
    }
    for workflow in machines_by_workflow(platform):
        assert routes[f"POST /workflows/{workflow}/runs"]["AuthorizationType"] == "AWS_IAM"
        # In the workflow's stack, with a role that may start its live alias and nothing else.
        resources = platform.workflow_stack(workflow)["Resources"]
        (integration,) = [
            r["Properties"]
            for r in resources.values()
            if r["Type"] == "AWS::ApiGatewayV2::Integration"
            and r["Properties"].get("IntegrationSubtype") == "StepFunctions-StartExecution"
        ]
        role = integration["CredentialsArn"]["Fn::GetAtt"][0]
        (policy,) = [
            r["Properties"]["PolicyDocument"]["Statement"]
            for r in resources.values()
            if r["Type"] == "AWS::IAM::Policy" and r["Properties"]["Roles"] == [{"Ref": role}]
        ]
        (live,) = [
            k
            for k, r in resources.items()
            if r["Type"] == "AWS::StepFunctions::StateMachineAlias"
            and r["Properties"]["Name"] == "live"
        ]
        live_arn = {"Fn::GetAtt": [live, "Arn"]}
        assert policy == [
            {"Action": "states:StartExecution", "Effect": "Allow", "Resource": live_arn}
        ]
        assert integration["RequestParameters"]["StateMachineArn"] == live_arn
    integrations = [
        i["Properties"]
        for i in platform.resources("AWS::ApiGatewayV2::Integration").values()
        if i["Properties"].get("IntegrationSubtype") == "StepFunctions-StartExecution"
    ]
    assert len(integrations) == 6
    for integration in integrations:
        assert integration["RequestParameters"]["Name"] == "$request.header.Idempotency-Key"
    Template.from_json(platform.template).has_resource_properties(
        "AWS::ApiGatewayV2::Stage", {"AccessLogSettings": Match.any_value()}
    )


def test_monitoring_has_a_dashboard_and_the_four_kinds_of_alarm(platform: Synthesized) -> None:
    template = Template.from_json(platform.template)
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    alarms = platform.resources("AWS::CloudWatch::Alarm")
    text = json.dumps(alarms)
    assert 'SELECT SUM(ExecutionsFailed) FROM SCHEMA(\\"AWS/States\\", StateMachineArn)' in text
    assert "GateTimeouts" in text and "BudgetPauses" in text
    depth = [a for a in alarms.values() if "ApproximateNumberOfMessagesVisible" in json.dumps(a)]
    assert len(depth) == 8
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"]
    filters = platform.resources("AWS::Logs::MetricFilter").values()
    assert len(filters) == 2 * 6
    body = json.dumps(platform.resources("AWS::CloudWatch::Dashboard"))
    for metric in ("ExecutionsStarted", "ExecutionsSucceeded", "InputTokens", "StepCostUSD"):
        assert metric in body
    assert "ThrottledSteps" in body and "CircuitOpenSteps" in body
    # Machines by their fixed names: the dashboard refers to no nested stack for them.
    for workflow in machines_by_workflow(platform):
        assert f":stateMachine:Switchyard-{workflow}" in body


PLATFORM_ALARMS = {
    "Switchyard-runs-failed": 1,
    "Switchyard-runs-timed-out": 1,
    "Switchyard-transitions-throttled": 1,
    "Switchyard-version-conflicts": 10,
    "Switchyard-retry-storm": 50,
    "Switchyard-provider-throttling": 10,
    "Switchyard-quota-throttling": 50,
    "Switchyard-circuits-open": 10,
    "Switchyard-gate-timeouts": 1,
    "Switchyard-budget-pauses": 1,
    "Switchyard-stuck-runs": 300_000,
    "Switchyard-step-throttles": 10,
    "Switchyard-step-dead-letters": 1,
    "Switchyard-step-dead-letters-age": 3600,
    "Switchyard-recorder-dead-letters": 1,
    "Switchyard-recorder-dead-letters-age": 3600,
}
"""The top-level stack's alarms by name, with their thresholds (docs/runbooks.md names them)."""


@pytest.mark.parametrize("which", ["platform", "platform_agnostic"])
def test_each_alarm_has_its_runbook_name_and_threshold(
    which: str, request: pytest.FixtureRequest
) -> None:
    synthesized: Synthesized = request.getfixturevalue(which)
    top = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in synthesized.template["Resources"].values()
        if a["Type"] == "AWS::CloudWatch::Alarm"
    }
    assert {name: p["Threshold"] for name, p in top.items()} == PLATFORM_ALARMS
    assert all(p["AlarmActions"] for p in top.values())
    nested = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] not in top
    }
    backlog = {n: p for n, p in nested.items() if n.endswith("-backlog")}
    assert set(backlog) == {"Switchyard-trigger-showcase-queue-2-backlog"}
    (queue,) = backlog.values()
    assert queue["MetricName"] == "ApproximateAgeOfOldestMessage" and queue["Threshold"] == 300
    dead_letters = set(nested) - set(backlog)
    assert len(dead_letters) == 6 and all(n.endswith("-dead-letters") for n in dead_letters)


def test_steps_refused_over_quota_or_by_an_open_circuit_raise_alarms(
    platform: Synthesized,
) -> None:
    """The counts the step functions emit (EMF, tests/unit/runtime/test_lambda_adapter.py),
    summed over every workflow."""
    alarms = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in platform.resources("AWS::CloudWatch::Alarm").values()
    }
    for name, metric in (
        ("Switchyard-quota-throttling", "ThrottledSteps"),
        ("Switchyard-circuits-open", "CircuitOpenSteps"),
    ):
        (query,) = alarms[name]["Metrics"]
        assert query["Expression"] == (
            f'SELECT SUM({metric}) FROM SCHEMA("switchyard", service, workflow)'
        )
        assert query["Period"] == 300
        assert alarms[name]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarms[name]["TreatMissingData"] == "notBreaching"
        assert "docs/runbooks.md#" in alarms[name]["AlarmDescription"]


def test_the_runbooks_name_every_alarm_with_its_threshold() -> None:
    """docs/runbooks.md's table of alarms, against the synthesized names and thresholds."""
    table = (REPO / "docs" / "runbooks.md").read_text().split("## The alarms", 1)[1]
    documented: dict[str, float] = {}
    for row in re.findall(r"^\| `(Switchyard-[a-z-]+)` \|[^|]+\|([^|]+)\|", table, re.MULTILINE):
        name, threshold = row
        number = float(re.findall(r"\d+", threshold)[-1])
        documented[name] = number * 1000 if name == "Switchyard-stuck-runs" else number
    assert documented == PLATFORM_ALARMS


def test_the_stuck_runs_alarm_watches_the_longest_step_attempt(platform: Synthesized) -> None:
    (stuck,) = [
        a["Properties"]
        for a in platform.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == "Switchyard-stuck-runs"
    ]
    expression, *durations = stuck["Metrics"]
    assert expression["Expression"] == "MAX([agentstep, toolstep, routerstep])"
    assert {d["MetricStat"]["Metric"]["MetricName"] for d in durations} == {"Duration"}
    assert {d["MetricStat"]["Stat"] for d in durations} == {"Maximum"}
    (conflicts,) = [
        a["Properties"]
        for a in platform.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == "Switchyard-version-conflicts"
    ]
    assert conflicts["Metrics"][0]["Expression"] == (
        'SELECT SUM(VersionConflicts) FROM SCHEMA("switchyard", service, workflow)'
    )
    (age,) = [
        a["Properties"]
        for a in platform.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == "Switchyard-step-dead-letters-age"
    ]
    assert age["MetricName"] == "ApproximateAgeOfOldestMessage"


def test_every_stack_stays_under_the_cloudformation_resource_limit(
    platform: Synthesized, corpus: Synthesized
) -> None:
    """tests/infra/test_scale.py checks 120 workflows; here the repository's and the corpus's."""
    for synthesized in (platform, corpus):
        assert len(synthesized.template["Resources"]) < 250
        for template in synthesized.nested.values():
            assert len(template["Resources"]) < 100
