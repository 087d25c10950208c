"""The switchyard stack: state, functions, step settings, workflows, triggers, API, monitoring."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.catalog import load_catalog
from infra.config import Settings
from infra.constructs.api import Api
from infra.constructs.functions import Functions
from infra.constructs.monitoring import Monitoring
from infra.constructs.state_store import StateStore, schema_migrations
from infra.constructs.step_settings import StepSettings
from infra.constructs.triggers import Triggers
from infra.constructs.workflows import Workflows
from infra.tool_access import derive_tool_access
from switchyard.constants import EVENT_BUS_NAME


class SwitchyardStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        machines = load_catalog(settings.statemachines, settings.workflows)
        access = derive_tool_access((m.workflow for m in machines if m.workflow), settings)

        self.store = StateStore(self, "State", settings=settings)
        self.api = Api(self, "Api", settings=settings, store=self.store)
        self.functions = Functions(
            self, "Functions", settings=settings, store=self.store, event_bus_name=EVENT_BUS_NAME
        )
        # No SWITCHYARD_APPROVAL_BASE_URL: no deployed function builds gate links yet (only the
        # local run report does, as <base>/gates/<id>); approval pages come with approval_api.
        self.step_settings = StepSettings(
            self, "StepSettings", settings=settings, functions=self.functions, access=access
        )
        self.migrations = schema_migrations(
            self, settings=settings, function=self.functions.migrate, store=self.store
        )
        self.workflows = Workflows(
            self,
            "Workflows",
            settings=settings,
            store=self.store,
            functions=self.functions,
            machines=machines,
        )
        for workflow in self.workflows.deployed.values():
            self.api.add_run_submission(workflow.name, workflow.live_arn)
        self.triggers = Triggers(
            self,
            "Triggers",
            settings=settings,
            store=self.store,
            functions=self.functions,
            api=self.api,
            workflows=self.workflows.deployed,
            event_bus_name=EVENT_BUS_NAME,
        )
        dead_letter_queues = {"step-dead-letters": self.workflows.dead_letters}
        for trigger in self.triggers.deployed:
            dead_letter_queues[f"{trigger.key}-dead-letters"] = trigger.dead_letters
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            settings=settings,
            store=self.store,
            functions=self.functions,
            workflows=self.workflows.deployed,
            dead_letter_queues=dead_letter_queues,
        )
        self._outputs()

    def _outputs(self) -> None:
        CfnOutput(self, "ApiUrl", value=self.api.url)
        CfnOutput(self, "EventBusName", value=self.triggers.bus.event_bus_name)
        CfnOutput(self, "DatabaseSecretArn", value=self.store.database_secret.secret_arn)
        CfnOutput(self, "AnthropicApiKeySecretArn", value=self.functions.model_api_key.secret_arn)
        CfnOutput(self, "StepDeadLetterQueueUrl", value=self.workflows.dead_letters.queue_url)
        CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
        for workflow in self.workflows.deployed.values():
            cid = "".join(p.capitalize() for p in workflow.name.split("-"))
            CfnOutput(self, f"{cid}LiveAlias", value=workflow.live_arn)
        for trigger in self.triggers.deployed:
            cid = "".join(c for c in trigger.key.title() if c.isalnum())
            if trigger.queue is not None:
                CfnOutput(self, f"{cid}QueueUrl", value=trigger.queue.queue_url)
            if trigger.webhook_path is not None:
                CfnOutput(self, f"{cid}WebhookUrl", value=f"{self.api.url}/{trigger.webhook_path}")
                CfnOutput(self, f"{cid}WebhookSecret", value=str(trigger.webhook_secret))
