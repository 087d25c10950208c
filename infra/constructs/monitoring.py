"""Monitoring: one dashboard and the alarms that need a person, on an encrypted SNS topic.

Runs started/succeeded/failed come from Step Functions' own metrics; step latency from Lambda's
`Duration` of the step functions; tokens and dollars per workflow from the Powertools metrics the
handlers emit (`switchyard.constants.Metric`, dimension `workflow`). Gate timeouts and budget
pauses are counted by metric filters on each workflow's execution log, so they need no function
code: `TaskTimedOut` of a `waitForTaskToken` task, and entering a `<step>:over budget` gate.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import Settings
from infra.constructs.functions import Functions
from infra.constructs.state_store import StateStore
from infra.constructs.workflows import DeployedWorkflow
from switchyard.constants import (
    METRICS_NAMESPACE,
    Metric,
    MetricDimension,
)

PERIOD = Duration.minutes(5)
GATE_TIMEOUT_PATTERN = logs.FilterPattern.all(
    logs.FilterPattern.string_value("$.type", "=", "TaskTimedOut"),
    logs.FilterPattern.string_value("$.details.resource", "=", "invoke.waitForTaskToken"),
)
BUDGET_PAUSE_PATTERN = logs.FilterPattern.all(
    logs.FilterPattern.string_value("$.type", "=", "TaskStateEntered"),
    logs.FilterPattern.string_value("$.details.name", "=", "*:over budget"),
)


def _search(metric: Metric, statistic: str, label: str) -> cloudwatch.MathExpression:
    dims = f"{MetricDimension.SERVICE},{MetricDimension.WORKFLOW}"
    return cloudwatch.MathExpression(
        expression=(
            f"SEARCH('{{{METRICS_NAMESPACE},{dims}}} MetricName=\"{metric}\"', '{statistic}', 300)"
        ),
        label=label,
        period=PERIOD,
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        store: StateStore,
        functions: Functions,
        workflows: dict[str, DeployedWorkflow],
        dead_letter_queues: Mapping[str, sqs.IQueue],
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Alarms",
            display_name="switchyard alarms",
            master_key=store.key,
            enforce_ssl=True,
        )
        # CloudWatch publishes alarm notifications to the encrypted topic.
        store.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],  # in a key policy, "*" is this key
            )
        )
        if settings.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        action = actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []
        self.query_alarms: list[cloudwatch.CfnAlarm] = []

        def alarm(construct_id: str, metric: cloudwatch.IMetric, description: str) -> None:
            created = cloudwatch.Alarm(
                self,
                construct_id,
                metric=metric,
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)

        started, succeeded, failed = [], [], []
        for number, workflow in enumerate(workflows.values()):
            machine = workflow.machine
            started.append(machine.metric_started(period=PERIOD, label=workflow.name))
            succeeded.append(machine.metric_succeeded(period=PERIOD, label=workflow.name))
            failed.append(
                cloudwatch.MathExpression(
                    # Ids are unique per workflow: one graph shows every workflow's expression.
                    expression=f"failed{number} + timedout{number}",
                    using_metrics={
                        f"failed{number}": machine.metric_failed(period=PERIOD),
                        f"timedout{number}": machine.metric_timed_out(period=PERIOD),
                    },
                    label=workflow.name,
                    period=PERIOD,
                )
            )
            cid = "".join(p.capitalize() for p in workflow.name.split("-"))
            for metric, pattern in (
                (Metric.GATE_TIMEOUTS, GATE_TIMEOUT_PATTERN),
                (Metric.BUDGET_PAUSES, BUDGET_PAUSE_PATTERN),
            ):
                logs.MetricFilter(
                    self,
                    f"{cid}{metric}",
                    log_group=workflow.log_group,
                    filter_pattern=pattern,
                    metric_namespace=METRICS_NAMESPACE,
                    metric_name=str(metric),
                    metric_value="1",
                )
        # Alarms are platform-wide, not per workflow: a stack holds at most 500 resources, and
        # the dashboard and the execution logs say which workflow it was.
        for query_metric, what in (
            ("ExecutionsFailed", "runs failed"),
            ("ExecutionsTimedOut", "runs timed out"),
        ):
            self._query_alarm(
                f"Runs{query_metric.removeprefix('Executions')}",
                f'SELECT SUM({query_metric}) FROM SCHEMA("AWS/States", StateMachineArn)',
                f"switchyard: {what} (any state machine of this account and region)",
            )
        for metric, what in (
            (Metric.GATE_TIMEOUTS, "a gate waited past its timeout"),
            (Metric.BUDGET_PAUSES, "a run paused over its budget"),
        ):
            alarm(
                f"{metric}Alarm",
                cloudwatch.Metric(
                    namespace=METRICS_NAMESPACE,
                    metric_name=str(metric),
                    statistic="Sum",
                    period=PERIOD,
                ),
                f"switchyard: {what} (the workflow's execution log says where)",
            )
        depth_widgets = []
        for name, queue in dead_letter_queues.items():
            cid = "".join(c for c in name.title() if c.isalnum())
            depth = queue.metric_approximate_number_of_messages_visible(
                period=PERIOD, statistic="Maximum", label=name
            )
            depth_widgets.append(depth)
            alarm(f"{cid}Depth", depth, f"dead-letter queue {name} holds messages")

        step_latency = [
            functions.by_name[name].metric_duration(
                statistic=stat, period=PERIOD, label=f"{name} {stat}"
            )
            for name in ("agent_step", "tool_step", "router_step")
            for stat in ("p50", "p95")
        ]
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{settings.stack_name}-switchyard"
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Runs started", left=started, width=8),
            cloudwatch.GraphWidget(title="Runs succeeded", left=succeeded, width=8),
            cloudwatch.GraphWidget(title="Runs failed or timed out", left=failed, width=8),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Step latency (Lambda duration, ms)", left=step_latency, width=8
            ),
            cloudwatch.GraphWidget(
                title="Step duration by workflow (ms, p95)",
                left=[_search(Metric.STEP_DURATION, "p95", "")],
                width=8,
            ),
            cloudwatch.GraphWidget(title="Dead-letter queues", left=depth_widgets, width=8),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Gate timeouts and budget pauses",
                left=[
                    cloudwatch.Metric(
                        namespace=METRICS_NAMESPACE,
                        metric_name=str(metric),
                        statistic="Sum",
                        period=PERIOD,
                        label=str(metric),
                    )
                    for metric in (Metric.GATE_TIMEOUTS, Metric.BUDGET_PAUSES)
                ],
                width=24,
            )
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Tokens by workflow",
                left=[
                    _search(Metric.INPUT_TOKENS, "Sum", "input"),
                    _search(Metric.OUTPUT_TOKENS, "Sum", "output"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="USD by workflow", left=[_search(Metric.COST_USD, "Sum", "")], width=12
            ),
        )

    def _query_alarm(self, construct_id: str, query: str, description: str) -> None:
        """An alarm on a Metrics Insights query: one alarm covers every state machine."""
        alarm = cloudwatch.CfnAlarm(
            self,
            construct_id,
            alarm_description=description,
            comparison_operator="GreaterThanOrEqualToThreshold",
            threshold=1,
            evaluation_periods=1,
            treat_missing_data="notBreaching",
            metrics=[
                cloudwatch.CfnAlarm.MetricDataQueryProperty(
                    id="q", expression=query, period=300, return_data=True
                )
            ],
            alarm_actions=[self.topic.topic_arn],
        )
        self.query_alarms.append(alarm)
