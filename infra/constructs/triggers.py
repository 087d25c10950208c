"""Triggers: Scheduler schedules, rules on the switchyard event bus, queues with Pipes, webhooks.

Schedules, events and queue messages reach the workflow through its trigger's EXPRESS starter
(`infra/translate/starter.py`), which names the run after the delivery's own id; webhooks go
through their verifying function (`functions/webhook_trigger`). Each trigger has a dead-letter
queue for deliveries that could not start a run, with an alarm on its depth.

The event bus is the platform's (`Triggers`, in the top-level stack); everything of one
workflow's triggers is in the workflow's nested stack (`WorkflowTriggers`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from aws_cdk import Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.catalog import CompiledMachine
from infra.constructs.monitoring import dead_letter_alarm, queue_backlog_alarm
from infra.constructs.workflow_machine import (
    WorkflowMachine,
    dead_letter_queue,
    partition_neutral,
)
from infra.nag import UNSCOPED_ACTIONS, acknowledge
from infra.names import machine_log_group, queue_name, starter_name
from infra.stacks.nested import Platform
from infra.translate.cron import scheduler_expressions
from infra.translate.input_paths import UnsupportedTemplateError
from infra.translate.starter import (
    DEAD_LETTER_QUEUE_URL,
    SCHEDULER_INPUT,
    WORKFLOW_ARN,
    StarterSpec,
    starter_definition,
)
from switchyard.constants import (
    WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV,
    WEBHOOK_INPUT_ENV,
    WEBHOOK_SECRET_ENV,
    WEBHOOK_STATE_MACHINE_ARN_ENV,
    WEBHOOK_WORKFLOW_ENV,
)
from switchyard.model import EventTrigger, QueueTrigger, ScheduleTrigger, WebhookTrigger

QUEUE_MAX_RECEIVES = 5


class TriggerError(ValueError):
    pass


@dataclass
class DeployedTrigger:
    workflow: str
    key: str
    kind: str
    dead_letters: sqs.Queue
    starter: sfn.StateMachine | None = None
    queue: sqs.Queue | None = None
    webhook_path: str | None = None
    webhook_function: lambda_.Function | None = None
    webhook_secret: str | None = None
    """The secret reference the function uses (`env:NAME` or `secret:NAME`)."""
    schedules: list[scheduler.CfnSchedule] = field(default_factory=list)


class Triggers(Construct):
    """The platform's part: the `switchyard` event bus. Refuses a queue two workflows share."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        machines: list[CompiledMachine],
        event_bus_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        queue_names: dict[str, str] = {}
        for machine in machines:
            for trigger in machine.triggers:
                if isinstance(trigger, QueueTrigger):
                    if trigger.queue in queue_names:
                        raise TriggerError(
                            f"queue '{trigger.queue}' is the trigger of both "
                            f"{queue_names[trigger.queue]} and {machine.name}: each message "
                            "would start only one of them; give each its own queue"
                        )
                    queue_names[trigger.queue] = machine.name
        self.bus = events.EventBus(self, "Bus", event_bus_name=event_bus_name)


class WorkflowTriggers(Construct):
    """One workflow's triggers, their starters, dead-letter queues and alarms."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        platform: Platform,
        workflow: WorkflowMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = platform.settings
        self._store = platform.store
        self._functions = platform.functions
        self._api = platform.api
        self.bus = platform.bus
        self.deployed: list[DeployedTrigger] = []
        webhooks = [t for t in workflow.compiled.triggers if isinstance(t, WebhookTrigger)]
        for index, trigger in enumerate(workflow.compiled.triggers):
            key = f"{workflow.name}-{trigger.type}-{index}"
            try:
                if isinstance(trigger, QueueTrigger):
                    deployed = self._queue(workflow, key, trigger)
                elif isinstance(trigger, EventTrigger):
                    deployed = self._event(workflow, key, trigger)
                elif isinstance(trigger, ScheduleTrigger):
                    deployed = self._schedule(workflow, key, trigger)
                else:
                    path = f"webhooks/{workflow.name}"
                    if len(webhooks) > 1:
                        path += f"/{webhooks.index(trigger)}"
                    deployed = self._webhook(workflow, key, trigger, path)
            except UnsupportedTemplateError as exc:
                raise TriggerError(
                    f"workflow {workflow.name}, triggers[{index}] ({trigger.type}): {exc}. "
                    "On AWS a schedule, event or queue trigger's input must be paths "
                    "(or text with paths); a webhook trigger may use any template."
                ) from None
            dead_letter_alarm(
                self,
                f"{_pascal(key)}DeadLettersDepth",
                deployed.dead_letters,
                f"{key}-dead-letters",
                platform.alarms,
                settings=self._settings,
            )
            if deployed.queue is not None:
                queue_backlog_alarm(
                    self,
                    f"{_pascal(key)}Backlog",
                    deployed.queue,
                    key,
                    platform.alarms,
                    settings=self._settings,
                )
            self.deployed.append(deployed)

    # --- starters -----------------------------------------------------------------------------

    def _starter(
        self, workflow: WorkflowMachine, spec: StarterSpec, dead_letters: sqs.Queue
    ) -> sfn.StateMachine:
        cid = _pascal(spec.trigger_key)
        role = iam.Role(
            self,
            f"{cid}StarterRole",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description=f"switchyard trigger {spec.trigger_key}: starts {workflow.name}",
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[workflow.live_arn])
        )
        acknowledge(role, "IAM5[Resource::*]", UNSCOPED_ACTIONS)
        substitutions = {WORKFLOW_ARN[2:-1]: workflow.live_arn}
        if spec.kind != "queue":
            substitutions[DEAD_LETTER_QUEUE_URL[2:-1]] = dead_letters.queue_url
            role.add_to_policy(
                iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[dead_letters.queue_arn])
            )
        name = starter_name(self._settings, spec.trigger_key)
        log_group = self._store.log_group(
            f"{cid}StarterLogs",
            self._settings,
            name=machine_log_group(name),
            scope=self,
        )
        return sfn.StateMachine(
            self,
            f"{cid}Starter",
            state_machine_name=name,
            state_machine_type=sfn.StateMachineType.EXPRESS,
            definition_body=sfn.DefinitionBody.from_string(
                partition_neutral(
                    json.dumps(starter_definition(spec), indent=2), substitutions, Stack.of(self)
                )
            ),
            definition_substitutions=substitutions,
            role=role,
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False
            ),
            tracing_enabled=True,
        )

    def _event(self, workflow: WorkflowMachine, key: str, trigger: EventTrigger) -> DeployedTrigger:
        spec = StarterSpec(workflow.name, key, "event", dict(trigger.input))
        dead_letters = dead_letter_queue(self, f"{_pascal(key)}DeadLetters")
        starter = self._starter(workflow, spec, dead_letters)
        role = iam.Role(
            self,
            f"{_pascal(key)}RuleRole",
            assumed_by=iam.ServicePrincipal("events.amazonaws.com"),
            description=f"switchyard trigger {key}: EventBridge starts the starter",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[starter.state_machine_arn]
            )
        )
        rule = events.CfnRule(
            self,
            f"{_pascal(key)}Rule",
            description=f"starts workflow {workflow.name}",
            event_bus_name=self.bus.event_bus_name,
            event_pattern=trigger.pattern,
            state="ENABLED",
            targets=[
                events.CfnRule.TargetProperty(
                    id="starter",
                    arn=starter.state_machine_arn,
                    role_arn=role.role_arn,
                    dead_letter_config=events.CfnRule.DeadLetterConfigProperty(
                        arn=dead_letters.queue_arn
                    ),
                    retry_policy=events.CfnRule.RetryPolicyProperty(
                        maximum_event_age_in_seconds=86400, maximum_retry_attempts=185
                    ),
                )
            ],
        )
        # EventBridge itself delivers what it could not hand to the starter.
        dead_letters.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[dead_letters.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": rule.attr_arn}},
            )
        )
        return DeployedTrigger(workflow.name, key, "event", dead_letters, starter=starter)

    def _schedule(
        self, workflow: WorkflowMachine, key: str, trigger: ScheduleTrigger
    ) -> DeployedTrigger:
        spec = StarterSpec(workflow.name, key, "schedule", dict(trigger.input))
        dead_letters = dead_letter_queue(self, f"{_pascal(key)}DeadLetters")
        starter = self._starter(workflow, spec, dead_letters)
        stack = Stack.of(self)
        role = iam.Role(
            self,
            f"{_pascal(key)}SchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            ),
            description=f"switchyard trigger {key}: Scheduler starts the starter",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[starter.state_machine_arn]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[dead_letters.queue_arn])
        )
        deployed = DeployedTrigger(workflow.name, key, "schedule", dead_letters, starter=starter)
        for index, expression in enumerate(scheduler_expressions(trigger.cron)):
            deployed.schedules.append(
                scheduler.CfnSchedule(
                    self,
                    f"{_pascal(key)}Schedule{index}",
                    description=f"starts workflow {workflow.name}: {trigger.cron} "
                    f"({trigger.timezone})",
                    schedule_expression=expression,
                    schedule_expression_timezone=trigger.timezone,
                    flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(
                        mode="OFF"
                    ),
                    state="ENABLED",
                    target=scheduler.CfnSchedule.TargetProperty(
                        arn=starter.state_machine_arn,
                        role_arn=role.role_arn,
                        input=json.dumps(SCHEDULER_INPUT),
                        dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(
                            arn=dead_letters.queue_arn
                        ),
                        retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                            maximum_event_age_in_seconds=86400, maximum_retry_attempts=185
                        ),
                    ),
                )
            )
        return deployed

    def _queue(self, workflow: WorkflowMachine, key: str, trigger: QueueTrigger) -> DeployedTrigger:
        spec = StarterSpec(workflow.name, key, "queue", dict(trigger.input))
        cid = _pascal(key)
        dead_letters = dead_letter_queue(self, f"{cid}DeadLetters")
        queue = sqs.Queue(
            self,
            f"{cid}Queue",
            queue_name=queue_name(self._settings, trigger.queue),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(60),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=dead_letters, max_receive_count=QUEUE_MAX_RECEIVES
            ),
        )
        starter = self._starter(workflow, spec, dead_letters)
        role = iam.Role(
            self,
            f"{cid}PipeRole",
            assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"),
            description=f"switchyard trigger {key}: the pipe reads the queue, runs the starter",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
                resources=[queue.queue_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartSyncExecution"], resources=[starter.state_machine_arn]
            )
        )
        pipes.CfnPipe(
            self,
            f"{cid}Pipe",
            description=f"starts workflow {workflow.name} for each message",
            role_arn=role.role_arn,
            source=queue.queue_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(
                    batch_size=1
                )
            ),
            target=starter.state_machine_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                    invocation_type="REQUEST_RESPONSE"
                )
            ),
        )
        return DeployedTrigger(
            workflow.name, key, "queue", dead_letters, starter=starter, queue=queue
        )

    # --- webhooks -------------------------------------------------------------------------------

    def _webhook(
        self, workflow: WorkflowMachine, key: str, trigger: WebhookTrigger, path: str
    ) -> DeployedTrigger:
        stack = Stack.of(self)
        cid = _pascal(key)
        dead_letters = dead_letter_queue(self, f"{cid}DeadLetters")
        kind, _, name = trigger.secret.partition(":")
        secret_ref = trigger.secret
        secret_arn: str | None = None
        if kind == "env":
            # On AWS an `env:` secret becomes a generated Secrets Manager secret: an environment
            # variable would show the key in the console. Give its value to the sender.
            secret = secretsmanager.Secret(
                self,
                f"{cid}Secret",
                description=f"switchyard webhook key of {workflow.name} (was env:{name})",
                encryption_key=self._store.key,
                removal_policy=self._store.removal,
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    password_length=48, exclude_punctuation=True
                ),
            )
            acknowledge(
                secret,
                "SMG4",
                "a key shared with the webhook's sender: rotating it needs the sender to change "
                "too, so it is rotated by hand (put-secret-value) together with the sender",
            )
            secret_arn = secret.secret_arn
            secret_ref = f"secret:{secret_arn}"
        else:
            secret_arn = (
                f"arn:{stack.partition}:secretsmanager:{stack.region}:{stack.account}"
                f":secret:{name}-??????"
            )
        function = self._functions.webhook_function(
            self,
            f"{cid}Webhook",
            {
                WEBHOOK_WORKFLOW_ENV: workflow.name,
                WEBHOOK_STATE_MACHINE_ARN_ENV: workflow.live_arn,
                WEBHOOK_SECRET_ENV: secret_ref,
                WEBHOOK_INPUT_ENV: json.dumps(dict(trigger.input)),
            },
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[workflow.live_arn])
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[secret_arn])
        )
        self._functions.grant_key_decrypt(function)
        # API Gateway invokes synchronously, so Lambda has no dead-letter queue to offer: the
        # function itself keeps deliveries whose run could not be started (and answers 502, so
        # the sender retries).
        function.add_environment(WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV, dead_letters.queue_url)
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[dead_letters.queue_arn])
        )
        self._api.add_webhook(self, path, function)
        return DeployedTrigger(
            workflow.name,
            key,
            "webhook",
            dead_letters,
            webhook_path=path,
            webhook_function=function,
            webhook_secret=secret_ref,
        )


def _pascal(text: str) -> str:
    words = "".join(c if c.isalnum() else " " for c in text).split()
    return "".join(word[:1].upper() + word[1:] for word in words)
