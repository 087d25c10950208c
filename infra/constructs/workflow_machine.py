"""One Step Functions STANDARD state machine per compiled workflow, with versions and aliases.

Every deploy that changes a machine's definition publishes a new state machine version (the
version resource is replaced and the old one retained, so runs in flight keep theirs); the `live`
alias, which new runs start on, and the `v<n>` alias of the workflow's version point at it.
Sub-workflow placeholders resolve to the child's `live` alias, or to its `v<n>` alias when the
parent pins version n.

A machine lives in its workflow's nested stack (infra/stacks/workflow.py). Each placeholder of its
definition is a parameter of that stack, of the same name: the step functions' ARNs and the
dead-letter queue come from the platform, a child's alias from the child's nested stack.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.catalog import CompiledMachine
from infra.nag import UNSCOPED_ACTIONS, acknowledge, acknowledge_resource
from infra.names import machine_log_group, machine_name
from infra.stacks.nested import Platform, platform_value
from switchyard.constants import LIVE_ALIAS, pinned_alias
from switchyard.contract import DEAD_LETTER_QUEUE_URL, function_placeholder

SYNC_EVENTS_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule"
CONTINUES_AS_NEW = '"arn:aws:states:::states:startExecution"'
"""The fire-and-forget start a loop's `continue_as_new` compiles to (not `.sync`)."""
"""The managed rule through which `startExecution.sync` learns that a child finished, as the
Step Functions developer guide names it ("IAM policies for ... Step Functions", `.sync`): the
machine's role puts and describes it, and CloudFormation never creates it."""
PARTITION = "AwsPartition"
"""The placeholder of the partition in a deployed definition's service-integration ARNs."""
_INTEGRATION = re.compile(r'("Resource"\s*:\s*")arn:aws:states:::')
DEAD_LETTER_QUEUE_ARN = "DeadLetterQueueArn"
"""The parameter beside `${DeadLetterQueueUrl}`: the role's permission needs the queue's ARN."""


def partition_neutral(definition: str, substitutions: dict[str, str], stack: Stack) -> str:
    """`definition` with its service integrations (`arn:aws:states:::lambda:invoke`, as the
    compiler writes them) in the stack's partition (`arn:aws-cn:states:::...` in China), through
    the `${AwsPartition}` substitution it adds."""
    substitutions[PARTITION] = stack.partition
    return _INTEGRATION.sub(rf"\1arn:${{{PARTITION}}}:states:::", definition)


def dead_letter_queue(scope: Construct, construct_id: str) -> sqs.Queue:
    """A dead-letter queue: 14 days of retention, SQS-managed encryption, TLS only."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    acknowledge(
        queue,
        "SQS3",
        "this queue is itself a dead-letter queue (of failed steps or of a trigger); an alarm "
        "on its depth calls a person instead of a further queue",
    )
    return queue


class WorkflowMachine(Construct):
    """A workflow's machine, its own least-privilege role and log group, its version, its `live`
    alias and, when another workflow pins this version, its `v<n>` alias."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        platform: Platform,
        compiled: CompiledMachine,
        children: Mapping[str, WorkflowMachine],
        pinned: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.compiled = compiled
        self.machine_name = machine_name(platform.settings, compiled.name)
        settings = platform.settings
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "states.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            ),
            description=f"switchyard workflow {compiled.name}: its functions, children and DLQ",
        )
        substitutions: dict[str, str] = {}
        invoked: list[str] = []
        for function in compiled.functions:
            name = function_placeholder(function)[2:-1]
            arn = platform_value(
                self,
                name,
                platform.functions.by_name[function.value].function_arn,
                f"ARN of the {function.value} function",
            )
            substitutions[name] = arn
            invoked += [arn, f"{arn}:*"]
            acknowledge_resource(
                self.role,
                f"{arn}:*",
                "versions and aliases of one function this workflow calls (Step Functions "
                "invokes qualified ARNs when a version is published); no other function",
            )
        if invoked:
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=invoked)
            )
        if compiled.uses_dead_letter_queue:
            queue = platform.step_dead_letters
            name = DEAD_LETTER_QUEUE_URL[2:-1]
            substitutions[name] = platform_value(
                self, name, queue.queue_url, "URL of the steps' dead-letter queue"
            )
            queue_arn = platform_value(
                self, DEAD_LETTER_QUEUE_ARN, queue.queue_arn, "ARN of the steps' dead-letter queue"
            )
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queue_arn])
            )
        if compiled.children:
            self._may_start_children(compiled, children, substitutions)
        if CONTINUES_AS_NEW in compiled.definition:
            self._may_continue_as_new()
        self.log_group = platform.store.log_group(
            "Logs",
            settings,
            name=machine_log_group(self.machine_name),
            scope=self,
        )
        acknowledge(self.role, "IAM5[Resource::*]", UNSCOPED_ACTIONS)
        self.machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=self.machine_name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(
                partition_neutral(compiled.definition, substitutions, stack)
            ),
            definition_substitutions=substitutions,
            role=self.role,
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
            tracing_enabled=True,
            comment=f"switchyard workflow {compiled.name} version {compiled.version}",
        )
        self.version = sfn.CfnStateMachineVersion(
            self,
            "Version",
            state_machine_arn=self.machine.state_machine_arn,
            state_machine_revision_id=self.cfn_machine.attr_state_machine_revision_id,
            description=f"workflow {compiled.name} version {compiled.version}",
        )
        # A changed definition replaces this resource (a new version is published); the old
        # version stays, so executions that started on it finish on it.
        self.version.apply_removal_policy(RemovalPolicy.RETAIN)  # DeletionPolicy, UpdateReplace
        routing = [
            sfn.CfnStateMachineAlias.RoutingConfigurationVersionProperty(
                state_machine_version_arn=self.version.attr_arn, weight=100
            )
        ]
        self.live = sfn.CfnStateMachineAlias(
            self,
            "Live",
            name=LIVE_ALIAS,
            description=f"new runs of {compiled.name} start here",
            routing_configuration=routing,
        )
        self.pinned: sfn.CfnStateMachineAlias | None = None
        """The `v<n>` alias, made only when another workflow pins this version."""
        if pinned:
            self.pinned = sfn.CfnStateMachineAlias(
                self,
                f"V{compiled.version}",
                name=pinned_alias(compiled.version),
                description=f"{compiled.name} version {compiled.version} (pinned sub-workflows)",
                routing_configuration=routing,
            )

    @property
    def name(self) -> str:
        return self.compiled.name

    @property
    def live_arn(self) -> str:
        return self.live.attr_arn

    @property
    def cfn_machine(self) -> sfn.CfnStateMachine:
        child = self.machine.node.default_child
        assert isinstance(child, sfn.CfnStateMachine)
        return child

    def _may_continue_as_new(self) -> None:
        """A loop with `continue_as_new` starts the run's next segment on its own machine
        (`$$.StateMachine.Id`); the ARN is built from the fixed name, as a reference to the
        machine would make the role depend on the machine that depends on it. An execution started
        on the `live` alias may see that alias's ARN in `$$.StateMachine.Id`, so the alias is
        granted beside the machine: no wildcard, only this machine."""
        stack = Stack.of(self)
        own = (
            f"arn:{stack.partition}:states:{stack.region}:{stack.account}"
            f":stateMachine:{self.machine_name}"
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[own, f"{own}:{LIVE_ALIAS}"]
            )
        )

    def _may_start_children(
        self,
        compiled: CompiledMachine,
        children: Mapping[str, WorkflowMachine],
        substitutions: dict[str, str],
    ) -> None:
        """Start each child's alias, describe and stop the runs it started, and the managed rule
        of `.sync`. A child's alias comes from its nested stack; its executions are named after
        its machine, whose name is fixed."""
        stack = Stack.of(self)
        aliases = []
        executions = []
        for child in compiled.children:
            target = children[child.workflow]
            if child.version is None:
                alias, which = target.live, LIVE_ALIAS
            else:
                assert target.pinned is not None
                alias, which = target.pinned, pinned_alias(child.version)
            arn = platform_value(
                self,
                child.placeholder,
                alias.attr_arn,
                f"the {which} alias of sub-workflow {child.workflow}",
            )
            substitutions[child.placeholder] = arn
            aliases.append(arn)
            child_executions = (
                f"arn:{stack.partition}:states:{stack.region}:{stack.account}"
                f":execution:{target.machine_name}:*"
            )
            executions.append(child_executions)
            acknowledge_resource(
                self.role,
                child_executions,
                "executions of one child workflow (startExecution.sync describes and stops "
                "the child run it started; run names are only known at run time)",
            )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=aliases)
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=executions,
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                resources=[
                    f"arn:{stack.partition}:events:{stack.region}:{stack.account}"
                    f":rule/{SYNC_EVENTS_RULE}"
                ],
            )
        )
