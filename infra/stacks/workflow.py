"""A workflow's nested stack: everything that exists because of one workflow.

Its machine (role, log group, version, aliases), the metric filters on the machine's log, its
run-submission route, and its triggers with their dead-letter queues and alarms: 12 resources
(13 with a `v<n>` alias), plus 10-12 per trigger, far below CloudFormation's 500. What it
takes from the platform comes in as parameters (infra/stacks/nested.py); what others need from it
(a child's alias ARN, a trigger's dead-letter queue for the dashboard) goes out as outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import CfnOutput, NestedStack
from constructs import Construct

from infra.catalog import CompiledMachine
from infra.constructs.monitoring import count_gate_timeouts_and_budget_pauses
from infra.constructs.triggers import WorkflowTriggers
from infra.constructs.workflow_machine import WorkflowMachine
from infra.stacks.nested import Platform


class WorkflowStack(NestedStack):
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
        stack_name = platform.settings.stack_name
        super().__init__(
            scope, construct_id, description=f"switchyard workflow {compiled.name} ({stack_name})"
        )
        self.machine = WorkflowMachine(
            self, "Machine", platform=platform, compiled=compiled, children=children, pinned=pinned
        )
        count_gate_timeouts_and_budget_pauses(self, self.machine.log_group)
        platform.api.add_run_submission(self, compiled.name, self.machine.live_arn)
        self.triggers = WorkflowTriggers(self, "Triggers", platform=platform, workflow=self.machine)
        self._outputs(platform)

    def _outputs(self, platform: Platform) -> None:
        CfnOutput(self, "LiveAlias", value=self.machine.live_arn)
        for trigger in self.triggers.deployed:
            cid = "".join(c for c in trigger.key.title() if c.isalnum())
            if trigger.queue is not None:
                CfnOutput(self, f"{cid}QueueUrl", value=trigger.queue.queue_url)
            if trigger.webhook_path is not None:
                CfnOutput(
                    self,
                    f"{cid}WebhookUrl",
                    value=f"{platform.api.url}/{trigger.webhook_path}",
                )
                CfnOutput(self, f"{cid}WebhookSecret", value=str(trigger.webhook_secret))
