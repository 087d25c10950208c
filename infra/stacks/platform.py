"""The switchyard stack: state, functions, step settings, workflows, triggers, API, monitoring."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.catalog import load_catalog
from infra.config import Settings
from infra.constructs.api import Api
from infra.constructs.approvals import Approvals
from infra.constructs.dashboard import add_dashboard
from infra.constructs.functions import Functions
from infra.constructs.monitoring import Monitoring
from infra.constructs.recorder import Recorder
from infra.constructs.state_store import StateStore, schema_migrations
from infra.constructs.step_settings import StepSettings
from infra.constructs.triggers import Triggers
from infra.constructs.workflows import Workflows
from infra.names import event_bus_name
from infra.tool_access import derive_tool_access

AVAILABILITY_ZONES = 2
"""Zones of the VPC's subnets (and so of the database's)."""


class SwitchyardStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        machines = load_catalog(settings.statemachines, settings.workflows)
        access = derive_tool_access((m.workflow for m in machines if m.workflow), settings)

        bus_name = event_bus_name(settings)
        self.store = StateStore(self, "State", settings=settings)
        self.api = Api(self, "Api", settings=settings, store=self.store)
        self.functions = Functions(
            self, "Functions", settings=settings, store=self.store, event_bus_name=bus_name
        )
        self.approvals = Approvals(
            self, "Approvals", settings=settings, store=self.store, functions=self.functions,
            api=self.api, machines=[m.name for m in machines],
        )  # fmt: skip
        self.dashboard = add_dashboard(
            self, settings=settings, store=self.store, functions=self.functions, api=self.api,
            machines=[m.name for m in machines],
        )  # fmt: skip
        self.step_settings = StepSettings(
            self, "StepSettings", settings=settings, functions=self.functions, access=access
        )
        self.recorder = Recorder(
            self, "Recorder", settings=settings, functions=self.functions,
            machines=[m.name for m in machines],
        )  # fmt: skip
        self.migrations = schema_migrations(
            self, settings=settings, function=self.functions.migrate, store=self.store
        )
        self.triggers = Triggers(self, "Triggers", machines=machines, event_bus_name=bus_name)
        self.monitoring = Monitoring(
            self, "Monitoring", settings=settings, store=self.store, functions=self.functions
        )
        # One nested stack per workflow (infra/constructs/workflows.py says why).
        self.workflows = Workflows(
            self,
            "Workflows",
            settings=settings,
            store=self.store,
            functions=self.functions,
            api=self.api,
            bus=self.triggers.bus,
            alarms=self.monitoring.topic,
            machines=machines,
        )
        self.monitoring.add_dead_letter_alarm("step-dead-letters", self.workflows.dead_letters)
        self.monitoring.add_dead_letter_alarm("recorder-dead-letters", self.recorder.dead_letters)
        dead_letter_queues: dict[str, sqs.IQueue] = {
            "step-dead-letters": self.workflows.dead_letters,
            "recorder-dead-letters": self.recorder.dead_letters,
        }
        for stack in self.workflows.stacks.values():
            for trigger in stack.triggers.deployed:
                dead_letter_queues[f"{trigger.key}-dead-letters"] = trigger.dead_letters
        self.monitoring.add_dashboard([m.name for m in machines], dead_letter_queues)
        self._outputs()

    @property
    def availability_zones(self) -> list[str]:
        """The region's first two zones as CloudFormation finds them (`Fn::GetAZs`), in every
        environment: with a concrete account and region CDK would otherwise look the zones up
        with the deploying credentials and hard-code them (or `dummy1a` without credentials)."""
        return [Fn.select(index, Fn.get_azs()) for index in range(AVAILABILITY_ZONES)]

    def _outputs(self) -> None:
        CfnOutput(self, "ApiUrl", value=self.api.url)
        CfnOutput(self, "EventBusName", value=self.triggers.bus.event_bus_name)
        CfnOutput(self, "DatabaseSecretArn", value=self.store.database_secret.secret_arn)
        CfnOutput(self, "DatabaseClusterIdentifier", value=self.store.cluster.cluster_identifier)
        CfnOutput(self, "AnthropicApiKeySecretArn", value=self.functions.model_api_key.secret_arn)
        CfnOutput(self, "StepDeadLetterQueueUrl", value=self.workflows.dead_letters.queue_url)
        CfnOutput(self, "RecorderDeadLetterQueueUrl", value=self.recorder.dead_letters.queue_url)
        CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
        # Each workflow's live alias, queue and webhook URLs are outputs of its nested stack: a
        # stack has at most 200 outputs.
