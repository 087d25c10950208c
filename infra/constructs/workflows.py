"""One Step Functions STANDARD state machine per compiled workflow, with versions and aliases.

Every deploy that changes a machine's definition publishes a new state machine version (the
version resource is replaced and the old one retained, so runs in flight keep theirs); the `live`
alias, which new runs start on, and the `v<n>` alias of the workflow's version point at it.
Sub-workflow placeholders resolve to the child's `live` alias, or to its `v<n>` alias when the
parent pins version n.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.catalog import CompiledMachine
from infra.config import Settings
from infra.constructs.functions import Functions
from infra.constructs.state_store import StateStore
from infra.nag import UNSCOPED_ACTIONS, acknowledge, token
from switchyard.constants import LIVE_ALIAS, pinned_alias
from switchyard.contract import DEAD_LETTER_QUEUE_URL, function_placeholder

SYNC_EVENTS_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionManagedRule"
"""The managed rule through which `startExecution.sync` learns that a child finished."""


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


@dataclass
class DeployedWorkflow:
    compiled: CompiledMachine
    machine: sfn.StateMachine
    version: sfn.CfnStateMachineVersion
    live: sfn.CfnStateMachineAlias
    pinned: sfn.CfnStateMachineAlias | None
    """The `v<n>` alias, made only when another workflow pins this version."""
    role: iam.Role
    log_group: logs.LogGroup

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


def _ordered(machines: list[CompiledMachine]) -> list[CompiledMachine]:
    """Children before their parents (the validator rules out cycles)."""
    by_name = {m.name: m for m in machines}
    done: dict[str, CompiledMachine] = {}

    def visit(machine: CompiledMachine) -> None:
        if machine.name in done:
            return
        for child in machine.children:
            visit(by_name[child.workflow])
        done[machine.name] = machine

    for machine in machines:
        visit(machine)
    return list(done.values())


class Workflows(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        store: StateStore,
        functions: Functions,
        machines: list[CompiledMachine],
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._store = store
        self._functions = functions
        self.dead_letters = dead_letter_queue(self, "StepDeadLetters")
        self.deployed: dict[str, DeployedWorkflow] = {}
        self._pinned = {
            (child.workflow, child.version)
            for machine in machines
            for child in machine.children
            if child.version is not None
        }
        for compiled in _ordered(machines):
            self.deployed[compiled.name] = self._deploy(compiled)

    def _child_arn(self, workflow: str, version: int | None) -> str:
        child = self.deployed[workflow]
        if version is None:
            return child.live.attr_arn
        assert child.pinned is not None
        return child.pinned.attr_arn

    def _deploy(self, compiled: CompiledMachine) -> DeployedWorkflow:
        stack = Stack.of(self)
        cid = _pascal(compiled.name)
        role = iam.Role(
            self,
            f"{cid}Role",
            assumed_by=iam.ServicePrincipal(
                "states.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            ),
            description=f"switchyard workflow {compiled.name}: its functions, children and DLQ",
        )
        substitutions: dict[str, str] = {}
        invoked: list[str] = []
        for function in compiled.functions:
            deployed_function = self._functions.by_name[function.value]
            arn = deployed_function.function_arn
            substitutions[function_placeholder(function)[2:-1]] = arn
            invoked += [arn, f"{arn}:*"]
            acknowledge(
                role,
                f"IAM5[Resource::{token(deployed_function)}:*]",
                "versions and aliases of one function this workflow calls (Step Functions "
                "invokes qualified ARNs when a version is published); no other function",
            )
        if invoked:
            role.add_to_policy(
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=invoked)
            )
        if compiled.uses_dead_letter_queue:
            substitutions[DEAD_LETTER_QUEUE_URL[2:-1]] = self.dead_letters.queue_url
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["sqs:SendMessage"], resources=[self.dead_letters.queue_arn]
                )
            )
        if compiled.children:
            aliases = []
            executions = []
            for child in compiled.children:
                arn = self._child_arn(child.workflow, child.version)
                substitutions[child.placeholder] = arn
                aliases.append(arn)
                child_machine = self.deployed[child.workflow].machine
                executions.append(
                    f"arn:{stack.partition}:states:{stack.region}:{stack.account}"
                    f":execution:{child_machine.state_machine_name}:*"
                )
                acknowledge(
                    role,
                    "IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>"
                    f":execution:{token(child_machine, 'Name')}:*]",
                    "executions of one child workflow (startExecution.sync describes and stops "
                    "the child run it started; run names are only known at run time)",
                )
            role.add_to_policy(
                iam.PolicyStatement(actions=["states:StartExecution"], resources=aliases)
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["states:DescribeExecution", "states:StopExecution"],
                    resources=executions,
                )
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                    resources=[
                        f"arn:{stack.partition}:events:{stack.region}:{stack.account}"
                        f":rule/{SYNC_EVENTS_RULE}"
                    ],
                )
            )
        log_group = self._store.log_group(
            f"{cid}Logs",
            self._settings,
            name=f"/aws/vendedlogs/states/{self._settings.stack_name}-{compiled.name}",
        )
        acknowledge(role, "IAM5[Resource::*]", UNSCOPED_ACTIONS)
        machine = sfn.StateMachine(
            self,
            cid,
            state_machine_name=f"{self._settings.stack_name}-{compiled.name}",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(compiled.definition),
            definition_substitutions=substitutions,
            role=role,
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
            tracing_enabled=True,
            comment=f"switchyard workflow {compiled.name} version {compiled.version}",
        )
        cfn_machine = machine.node.default_child
        assert isinstance(cfn_machine, sfn.CfnStateMachine)
        version = sfn.CfnStateMachineVersion(
            self,
            f"{cid}Version",
            state_machine_arn=machine.state_machine_arn,
            state_machine_revision_id=cfn_machine.attr_state_machine_revision_id,
            description=f"workflow {compiled.name} version {compiled.version}",
        )
        # A changed definition replaces this resource (a new version is published); the old
        # version stays, so executions that started on it finish on it.
        version.apply_removal_policy(RemovalPolicy.RETAIN)  # DeletionPolicy and UpdateReplacePolicy
        routing = [
            sfn.CfnStateMachineAlias.RoutingConfigurationVersionProperty(
                state_machine_version_arn=version.attr_arn, weight=100
            )
        ]
        live = sfn.CfnStateMachineAlias(
            self,
            f"{cid}Live",
            name=LIVE_ALIAS,
            description=f"new runs of {compiled.name} start here",
            routing_configuration=routing,
        )
        pinned = None
        if (compiled.name, compiled.version) in self._pinned:
            pinned = sfn.CfnStateMachineAlias(
                self,
                f"{cid}V{compiled.version}",
                name=pinned_alias(compiled.version),
                description=f"{compiled.name} version {compiled.version} (pinned sub-workflows)",
                routing_configuration=routing,
            )
        return DeployedWorkflow(compiled, machine, version, live, pinned, role, log_group)


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))
