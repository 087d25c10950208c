"""The recorder (docs/deploy.md, "Run records"): deployed runs' `workflow_runs` and `task_runs` in
Aurora, from Step Functions' execution status-change events.

- An EventBridge rule on the account's default bus (where Step Functions sends them) matches
  `aws.states` "Step Functions Execution Status Change" events of this stack's workflow machines
  only: each machine's executions by their ARN prefix (`...:execution:<machine>:`), or, when that
  list would pass EventBridge's 2,048-character pattern limit, the stack's machine-name prefix.
- The rule invokes `functions/recorder` (in the VPC, beside the database), which reads the
  execution's history and projects it (`switchyard.records`). Its role may read this stack's
  executions only (`DescribeExecution`, `DescribeStateMachineForExecution`,
  `GetExecutionHistory`), and the database secret.
- What could not be delivered (EventBridge) or recorded after Lambda's retries (the function's
  asynchronous failures) goes to one dead-letter queue, alarmed by the monitoring construct.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import Settings
from infra.constructs.functions import Functions
from infra.constructs.workflow_machine import dead_letter_queue
from infra.nag import acknowledge_resource
from infra.names import machine_name
from switchyard.constants import RECORDER_FUNCTION, RECORDER_FUNCTIONS_ENV
from switchyard.records import STEP_FUNCTIONS
from switchyard.records.events import DETAIL_TYPE, SOURCE

READ_ACTIONS = [
    "states:DescribeExecution",
    "states:DescribeStateMachineForExecution",
    "states:GetExecutionHistory",
]
"""What `switchyard.records.recorder.Recorder` calls, each on an execution's ARN."""
MAX_LISTED_MACHINES = 60
"""Up to this many, the role lists each machine's executions; past it (the policy would near
IAM's size limit) it names them by the stack's machine-name prefix."""
MAX_PATTERN_CHARS = 2048
"""EventBridge's default quota on an event pattern's size."""
_LONGEST_ARN_PARTS = ("aws-iso-b", "ap-southeast-5", "123456789012")
"""A partition, region and account as long as any, to size the pattern before they are known."""


def event_pattern(base: str, machines: Sequence[str], stack_name: str) -> dict[str, object]:
    """Status changes of executions of `machines` (`base`: `arn:...:execution:`), listed when
    the pattern fits EventBridge's limit, else by the stack's machine-name prefix."""
    prefixes = [{"prefix": f"{base}{machine}:"} for machine in machines]
    longest = "arn:{}:states:{}:{}:execution:".format(*_LONGEST_ARN_PARTS)
    sized = [{"prefix": f"{longest}{machine}:"} for machine in machines]
    pattern: dict[str, object] = {"source": [SOURCE], "detail-type": [DETAIL_TYPE]}
    if len(json.dumps({**pattern, "detail": {"executionArn": sized}})) > MAX_PATTERN_CHARS:
        prefixes = [{"prefix": f"{base}{stack_name}-"}]
    return {**pattern, "detail": {"executionArn": prefixes}}


class Recorder(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        functions: Functions,
        machines: Sequence[str],
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        names = {name: functions.by_name[name].function_name for name in STEP_FUNCTIONS}
        self.function = functions.function(
            RECORDER_FUNCTION, environment={RECORDER_FUNCTIONS_ENV: stack.to_json_string(names)}
        )
        self.dead_letters: sqs.Queue = dead_letter_queue(self, "DeadLetters")
        self.function.configure_async_invoke(
            max_event_age=Duration.hours(6),
            retry_attempts=2,
            on_failure=destinations.SqsDestination(self.dead_letters),
        )
        base = f"arn:{stack.partition}:states:{stack.region}:{stack.account}:execution:"
        machine_names = sorted(machine_name(settings, name) for name in machines)
        self._grant_reads(base, machine_names, settings)
        self.rule = events.CfnRule(
            self,
            "StatusChanges",
            description="Step Functions status changes of this stack's workflows -> recorder",
            event_pattern=event_pattern(base, machine_names, settings.stack_name),
            state="ENABLED",
            targets=[
                events.CfnRule.TargetProperty(
                    id="recorder",
                    arn=self.function.function_arn,
                    dead_letter_config=events.CfnRule.DeadLetterConfigProperty(
                        arn=self.dead_letters.queue_arn
                    ),
                    retry_policy=events.CfnRule.RetryPolicyProperty(
                        maximum_event_age_in_seconds=86400, maximum_retry_attempts=185
                    ),
                )
            ],
        )
        lambda_.CfnPermission(
            self,
            "Invoke",
            action="lambda:InvokeFunction",
            function_name=self.function.function_arn,
            principal="events.amazonaws.com",
            source_arn=self.rule.attr_arn,
        )
        # EventBridge itself delivers what it could not hand to the function.
        self.dead_letters.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[self.dead_letters.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": self.rule.attr_arn}},
            )
        )

    def _grant_reads(self, base: str, machines: Sequence[str], settings: Settings) -> None:
        if not machines:
            return
        resources = execution_arns(base, machines, settings)
        role = self.function.role
        assert role is not None
        for resource, machine in zip(resources, machines, strict=False):
            reason = (
                f"the executions of this stack's machine {machine}, named when each run "
                "starts; read only (describe, history)"
                if len(resources) == len(machines)
                else "the executions of this stack's workflow machines, by their fixed prefix: "
                f"past {MAX_LISTED_MACHINES} machines a list would near IAM's policy size "
                "limit; read only (describe, history)"
            )
            acknowledge_resource(role, resource, reason)
        role.add_to_principal_policy(iam.PolicyStatement(actions=READ_ACTIONS, resources=resources))


def execution_arns(base: str, machines: Sequence[str], settings: Settings) -> list[str]:
    """The executions of `machines` (machine names; `base`: `arn:...:execution:`): each
    machine's (`<machine>:*`, their names are chosen when each run starts), or past
    `MAX_LISTED_MACHINES` (a list would near IAM's policy size limit) the stack's machines' by
    their name prefix."""
    if len(machines) <= MAX_LISTED_MACHINES:
        return [f"{base}{machine}:*" for machine in machines]
    return [f"{base}{settings.stack_name}-*"]
