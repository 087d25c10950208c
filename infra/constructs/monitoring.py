"""Monitoring: one dashboard and the alarms that need a person, on an encrypted SNS topic.

Runs started/succeeded/failed come from Step Functions' own metrics; step latency from Lambda's
`Duration` of the step functions; tokens and dollars per workflow from the Powertools metrics the
handlers emit (`switchyard.constants.Metric`, dimension `workflow`). Gate timeouts and budget
pauses are counted by metric filters on each workflow's execution log, so they need no function
code: `TaskTimedOut` of a `waitForTaskToken` task, and entering a block's `budget gate` (named
`budget gate`, `budget gate (2)`, ... since one is shared by the steps of a block).

The dashboard, the alarm topic and the platform-wide alarms are in the top-level stack; what
belongs to one workflow (its metric filters, its triggers' dead-letter alarms) is in the
workflow's nested stack. The dashboard names each workflow's machine by its fixed ARN, with no
reference into the nested stacks, so adding a workflow changes the dashboard and nothing else of
the top-level stack but its nested stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import ArnFormat, Duration, Stack
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
from infra.names import dashboard_name, machine_name
from switchyard.constants import (
    METRICS_NAMESPACE,
    Metric,
    MetricDimension,
)

PERIOD = Duration.minutes(5)
WORKFLOWS_PER_GRAPH = 100
"""A graph shows at most 500 metrics: the failed-or-timed-out graph takes three per workflow."""
GATE_TIMEOUT_PATTERN = logs.FilterPattern.all(
    logs.FilterPattern.string_value("$.type", "=", "TaskTimedOut"),
    logs.FilterPattern.string_value("$.details.resource", "=", "invoke.waitForTaskToken"),
)
BUDGET_PAUSE_PATTERN = logs.FilterPattern.all(
    logs.FilterPattern.string_value("$.type", "=", "TaskStateEntered"),
    logs.FilterPattern.string_value("$.details.name", "=", "budget gate*"),
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


def alarm_on(
    scope: Construct,
    construct_id: str,
    metric: cloudwatch.IMetric,
    description: str,
    topic: sns.ITopic,
) -> cloudwatch.Alarm:
    """An alarm at one or more in a period, to the alarm topic; missing data is fine."""
    created = cloudwatch.Alarm(
        scope,
        construct_id,
        metric=metric,
        threshold=1,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )
    created.add_alarm_action(actions.SnsAction(topic))
    return created


def dead_letter_alarm(
    scope: Construct, construct_id: str, queue: sqs.IQueue, name: str, topic: sns.ITopic
) -> cloudwatch.Alarm:
    return alarm_on(
        scope,
        construct_id,
        dead_letter_depth(queue, name),
        f"dead-letter queue {name} holds messages",
        topic,
    )


def dead_letter_depth(queue: sqs.IQueue, name: str) -> cloudwatch.Metric:
    return queue.metric_approximate_number_of_messages_visible(
        period=PERIOD, statistic="Maximum", label=name
    )


def count_gate_timeouts_and_budget_pauses(scope: Construct, log_group: logs.ILogGroup) -> None:
    """Metric filters on a workflow's execution log (100 are allowed per log group)."""
    for metric, pattern in (
        (Metric.GATE_TIMEOUTS, GATE_TIMEOUT_PATTERN),
        (Metric.BUDGET_PAUSES, BUDGET_PAUSE_PATTERN),
    ):
        logs.MetricFilter(
            scope,
            str(metric),
            log_group=log_group,
            filter_pattern=pattern,
            metric_namespace=METRICS_NAMESPACE,
            metric_name=str(metric),
            metric_value="1",
        )


def _states_metric(arn: str, metric_name: str, label: str | None = None) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/States",
        metric_name=metric_name,
        dimensions_map={"StateMachineArn": arn},
        statistic="Sum",
        period=PERIOD,
        label=label,
    )


class Monitoring(Construct):
    """The alarm topic and the platform-wide alarms; `add_dashboard` once the workflows exist."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        store: StateStore,
        functions: Functions,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._functions = functions
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
        self.alarms: list[cloudwatch.Alarm] = []
        self.query_alarms: list[cloudwatch.CfnAlarm] = []
        # Alarms are platform-wide, not per workflow, and the dashboard and the execution logs
        # say which workflow it was.
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
            self.alarms.append(
                alarm_on(
                    self,
                    f"{metric}Alarm",
                    cloudwatch.Metric(
                        namespace=METRICS_NAMESPACE,
                        metric_name=str(metric),
                        statistic="Sum",
                        period=PERIOD,
                    ),
                    f"switchyard: {what} (the workflow's execution log says where)",
                    self.topic,
                )
            )

    def add_dead_letter_alarm(self, name: str, queue: sqs.IQueue) -> None:
        """An alarm on a platform dead-letter queue (a trigger's alarm is in its nested stack)."""
        cid = "".join(c for c in name.title() if c.isalnum())
        self.alarms.append(dead_letter_alarm(self, f"{cid}Depth", queue, name, self.topic))

    def add_dashboard(
        self, workflows: Sequence[str], dead_letter_queues: Mapping[str, sqs.IQueue]
    ) -> cloudwatch.Dashboard:
        """Runs per workflow (graphs of at most `WORKFLOWS_PER_GRAPH`), step latency, dead-letter
        queues, gate timeouts and budget pauses, tokens and dollars."""
        stack = Stack.of(self)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=dashboard_name(self._settings)
        )
        names = list(workflows)
        for first in range(0, max(len(names), 1), WORKFLOWS_PER_GRAPH):
            chunk = names[first : first + WORKFLOWS_PER_GRAPH]
            part = "" if len(names) <= WORKFLOWS_PER_GRAPH else f" ({chunk[0]} to {chunk[-1]})"
            started, succeeded, failed = [], [], []
            for number, workflow in enumerate(chunk):
                arn = stack.format_arn(
                    service="states",
                    resource="stateMachine",
                    resource_name=machine_name(self._settings, workflow),
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
                started.append(_states_metric(arn, "ExecutionsStarted", workflow))
                succeeded.append(_states_metric(arn, "ExecutionsSucceeded", workflow))
                failed.append(
                    cloudwatch.MathExpression(
                        # Ids are unique per workflow: one graph shows every workflow's expression.
                        expression=f"failed{number} + timedout{number}",
                        using_metrics={
                            f"failed{number}": _states_metric(arn, "ExecutionsFailed"),
                            f"timedout{number}": _states_metric(arn, "ExecutionsTimedOut"),
                        },
                        label=workflow,
                        period=PERIOD,
                    )
                )
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(title=f"Runs started{part}", left=started, width=8),
                cloudwatch.GraphWidget(title=f"Runs succeeded{part}", left=succeeded, width=8),
                cloudwatch.GraphWidget(
                    title=f"Runs failed or timed out{part}", left=failed, width=8
                ),
            )
        step_latency = [
            self._functions.by_name[name].metric_duration(
                statistic=stat, period=PERIOD, label=f"{name} {stat}"
            )
            for name in ("agent_step", "tool_step", "router_step")
            for stat in ("p50", "p95")
        ]
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Step latency (Lambda duration, ms)", left=step_latency, width=8
            ),
            cloudwatch.GraphWidget(
                title="Step duration by workflow (ms, p95)",
                left=[_search(Metric.STEP_DURATION, "p95", "")],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Dead-letter queues",
                left=[dead_letter_depth(q, name) for name, q in dead_letter_queues.items()],
                width=8,
            ),
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
        return self.dashboard

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
