"""Monitoring: one dashboard and the alarms that need a person, on an encrypted SNS topic.

Every alarm is named `<stack>-<what>` (`infra.names.alarm_name`), and docs/runbooks.md has a
section for each: its metric, its threshold, and the commands that diagnose and fix it.

Runs started/succeeded/failed come from Step Functions' own metrics; step latency from Lambda's
`Duration` of the step functions; tokens and dollars per workflow from the Powertools metrics the
handlers emit (`switchyard.constants.Metric`, dimension `workflow`), which also count retries,
rate-limited attempts and version conflicts. Gate timeouts and budget pauses are counted by
metric filters on each workflow's execution log, so they need no function code: `TaskTimedOut`
of a `waitForTaskToken` task, and entering a block's `budget gate` (named `budget gate`,
`budget gate (2)`, ... since one is shared by the steps of a block).

The dashboard, the alarm topic and the platform-wide alarms are in the top-level stack; what
belongs to one workflow (its metric filters, its triggers' dead-letter and backlog alarms) is in
the workflow's nested stack. The dashboard names each workflow's machine by its fixed ARN, with no
reference into the nested stacks, so adding a workflow changes the dashboard and nothing else of
the top-level stack but its nested stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
from infra.names import alarm_name, dashboard_name, machine_name
from switchyard.constants import (
    METRICS_NAMESPACE,
    Metric,
    MetricDimension,
)

PERIOD = Duration.minutes(5)
STEP_FUNCTIONS = ("agent_step", "tool_step", "router_step")
ORPHAN_AGE_SECONDS = 3600
"""A message that has waited an hour in a platform dead-letter queue (a failed step's input, an
execution the recorder could not record): nobody has handled it."""
QUEUE_BACKLOG_SECONDS = 300
VERSION_CONFLICTS_PER_PERIOD = 10
RETRY_ATTEMPTS_PER_PERIOD = 50
RATE_LIMITED_PER_PERIOD = 10
THROTTLED_STEPS_PER_PERIOD = 50
"""Steps refused over a tenant's quota: they wait and retry by design, so a few are the quota doing
its job; this many in 5 minutes is a quota that stays full (work waits for minutes)."""
CIRCUIT_OPEN_STEPS_PER_PERIOD = 10
"""Steps refused by an open circuit: a downstream failed enough to be rested."""
STEP_THROTTLES_PER_PERIOD = 10
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


STATES_SCHEMA = 'SCHEMA("AWS/States", StateMachineArn)'
"""Every state machine of the account and region."""
SWITCHYARD_SCHEMA = (
    f'SCHEMA("{METRICS_NAMESPACE}", {MetricDimension.SERVICE}, {MetricDimension.WORKFLOW})'
)
"""Every step function's and workflow's count of a `switchyard` metric."""


@dataclass(frozen=True, slots=True)
class QueryAlarm:
    """An alarm on a sum over every state machine or workflow (a Metrics Insights query): one
    alarm covers them all, and the dashboard and execution logs say which it was."""

    construct_id: str
    metric: str
    schema: str
    name: str
    """`<stack>-<name>`, as docs/runbooks.md names it."""
    threshold: int
    description: str

    @property
    def query(self) -> str:
        return f"SELECT SUM({self.metric}) FROM {self.schema}"


def _counted(metric: Metric, threshold: int, name: str, what: str, runbook: str) -> QueryAlarm:
    return QueryAlarm(
        f"{metric}Alarm",
        str(metric),
        SWITCHYARD_SCHEMA,
        name,
        threshold,
        f"switchyard: {threshold} or more {what} in 5 minutes (docs/runbooks.md#{runbook})",
    )


QUERY_ALARMS: tuple[QueryAlarm, ...] = (
    QueryAlarm(
        "RunsFailed",
        "ExecutionsFailed",
        STATES_SCHEMA,
        "runs-failed",
        1,
        "switchyard: runs failed (any state machine of this account and region)",
    ),
    QueryAlarm(
        "RunsTimedOut",
        "ExecutionsTimedOut",
        STATES_SCHEMA,
        "runs-timed-out",
        1,
        "switchyard: runs timed out (any state machine of this account and region)",
    ),
    QueryAlarm(
        "TransitionsThrottled",
        "ExecutionThrottled",
        STATES_SCHEMA,
        "transitions-throttled",
        1,
        "switchyard: Step Functions throttled state transitions (a fan-out or a retry storm"
        " past the account's transition quota; docs/runbooks.md#fan-out-contention)",
    ),
    _counted(
        Metric.VERSION_CONFLICTS,
        VERSION_CONFLICTS_PER_PERIOD,
        "version-conflicts",
        "attempts met another attempt updating the same record",
        "concurrent-updates",
    ),
    _counted(
        Metric.RETRY_ATTEMPTS,
        RETRY_ATTEMPTS_PER_PERIOD,
        "retry-storm",
        "step attempts were retries",
        "retry-storms",
    ),
    _counted(
        Metric.RATE_LIMITED,
        RATE_LIMITED_PER_PERIOD,
        "provider-throttling",
        "attempts were refused as too many requests",
        "provider-throttling",
    ),
    _counted(
        Metric.THROTTLED_STEPS,
        THROTTLED_STEPS_PER_PERIOD,
        "quota-throttling",
        "step attempts were refused over a tenant's quota (throttled)",
        "provider-throttling",
    ),
    _counted(
        Metric.CIRCUIT_OPEN_STEPS,
        CIRCUIT_OPEN_STEPS_PER_PERIOD,
        "circuits-open",
        "step attempts were refused by an open circuit breaker (circuit_open)",
        "retry-storms",
    ),
)
"""The platform's alarms on counts, with their thresholds per 5 minutes."""


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
    *,
    name: str,
    threshold: float = 1,
) -> cloudwatch.Alarm:
    """An alarm at `threshold` or more in a period, to the alarm topic; missing data is fine.
    `name` is the alarm's name, as docs/runbooks.md gives it (`infra.names.alarm_name`)."""
    created = cloudwatch.Alarm(
        scope,
        construct_id,
        alarm_name=name,
        metric=metric,
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=description,
    )
    created.add_alarm_action(actions.SnsAction(topic))
    return created


def dead_letter_alarm(
    scope: Construct,
    construct_id: str,
    queue: sqs.IQueue,
    name: str,
    topic: sns.ITopic,
    *,
    settings: Settings,
) -> cloudwatch.Alarm:
    return alarm_on(
        scope,
        construct_id,
        dead_letter_depth(queue, name),
        f"dead-letter queue {name} holds messages",
        topic,
        name=alarm_name(settings, name),
    )


def queue_backlog_alarm(
    scope: Construct,
    construct_id: str,
    queue: sqs.IQueue,
    name: str,
    topic: sns.ITopic,
    *,
    settings: Settings,
) -> cloudwatch.Alarm:
    """A queue trigger's queue whose oldest message has waited `QUEUE_BACKLOG_SECONDS` for its
    run: the pipe is not keeping up (or not starting runs at all)."""
    return alarm_on(
        scope,
        construct_id,
        queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum"),
        f"switchyard: a message of queue {name} has waited {QUEUE_BACKLOG_SECONDS} s or more"
        " to start its run (docs/runbooks.md#queue-backlog)",
        topic,
        name=alarm_name(settings, f"{name}-backlog"),
        threshold=QUEUE_BACKLOG_SECONDS,
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
        # say which workflow it was. docs/runbooks.md has a section for each.
        for alarm in QUERY_ALARMS:
            self._query_alarm(alarm)
        for metric, name, what in (
            (Metric.GATE_TIMEOUTS, "gate-timeouts", "a gate waited past its timeout"),
            (Metric.BUDGET_PAUSES, "budget-pauses", "a run paused over its budget"),
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
                    name=alarm_name(settings, name),
                )
            )
        self._stuck_runs_alarm()
        self._step_throttles_alarm()

    def _step_metrics(self, metric: str, statistic: str) -> dict[str, cloudwatch.IMetric]:
        return {
            name.replace("_", ""): self._functions.by_name[name].metric(
                metric, statistic=statistic, period=PERIOD
            )
            for name in STEP_FUNCTIONS
        }

    def _stuck_runs_alarm(self) -> None:
        """A step function that ran `stuck_after_seconds` without returning left its run without
        a transition for as long. Lambda reports an invocation's duration when it ends (at the
        latest at its timeout), so this alarm comes then; docs/runbooks.md#stuck-runs says why
        no scheduled function looks for stuck runs on AWS."""
        seconds = self._settings.stuck_after_seconds
        durations = self._step_metrics("Duration", "Maximum")
        self.alarms.append(
            alarm_on(
                self,
                "StuckRunsAlarm",
                cloudwatch.MathExpression(
                    expression=f"MAX([{', '.join(durations)}])",
                    using_metrics=durations,
                    label="longest step attempt (ms)",
                    period=PERIOD,
                ),
                f"switchyard: a step function ran {seconds} s or more without returning: its run"
                " made no transition for as long (docs/runbooks.md#stuck-runs)",
                self.topic,
                name=alarm_name(self._settings, "stuck-runs"),
                threshold=seconds * 1000,
            )
        )

    def _step_throttles_alarm(self) -> None:
        throttles = self._step_metrics("Throttles", "Sum")
        self.alarms.append(
            alarm_on(
                self,
                "StepThrottlesAlarm",
                cloudwatch.MathExpression(
                    expression=" + ".join(f"FILL({key}, 0)" for key in throttles),
                    using_metrics=throttles,
                    label="step invocations throttled",
                    period=PERIOD,
                ),
                f"switchyard: {STEP_THROTTLES_PER_PERIOD} or more step invocations in 5 minutes"
                " were throttled at the step functions' reserved concurrency"
                " (docs/runbooks.md#fan-out-contention)",
                self.topic,
                name=alarm_name(self._settings, "step-throttles"),
                threshold=STEP_THROTTLES_PER_PERIOD,
            )
        )

    def add_dead_letter_alarm(self, name: str, queue: sqs.IQueue) -> None:
        """Alarms on a platform dead-letter queue: any message in it, and its oldest message
        waiting `ORPHAN_AGE_SECONDS` (a trigger's alarm is in its nested stack)."""
        cid = "".join(c for c in name.title() if c.isalnum())
        settings = self._settings
        self.alarms.append(
            dead_letter_alarm(self, f"{cid}Depth", queue, name, self.topic, settings=settings)
        )
        self.alarms.append(
            alarm_on(
                self,
                f"{cid}Age",
                queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum"),
                f"switchyard: a message has waited {ORPHAN_AGE_SECONDS} s or more in {name}:"
                " left there, unhandled (docs/runbooks.md#orphaned-runs)",
                self.topic,
                name=alarm_name(settings, f"{name}-age"),
                threshold=ORPHAN_AGE_SECONDS,
            )
        )

    def add_dashboard(
        self, workflows: Sequence[str], dead_letter_queues: Mapping[str, sqs.IQueue]
    ) -> cloudwatch.Dashboard:
        """Runs per workflow (graphs of at most `WORKFLOWS_PER_GRAPH`), step latency, dead-letter
        queues, gate timeouts and budget pauses, throttled and circuit-open steps, tokens and
        dollars."""
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
                title="Retries, rate limits and version conflicts by workflow",
                left=[
                    _search(Metric.RETRY_ATTEMPTS, "Sum", "retries"),
                    _search(Metric.RATE_LIMITED, "Sum", "rate-limited"),
                    _search(Metric.VERSION_CONFLICTS, "Sum", "conflicts"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Longest step attempt (ms; the stuck-runs alarm's metric)",
                left=list(self._step_metrics("Duration", "Maximum").values()),
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Steps refused before their call: over quota, circuit open",
                left=[
                    _search(Metric.THROTTLED_STEPS, "Sum", "throttled"),
                    _search(Metric.CIRCUIT_OPEN_STEPS, "Sum", "circuit open"),
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

    def _query_alarm(self, alarm: QueryAlarm) -> None:
        """An alarm on a Metrics Insights query (L1: the L2 `Alarm` takes no query)."""
        created = cloudwatch.CfnAlarm(
            self,
            alarm.construct_id,
            alarm_name=alarm_name(self._settings, alarm.name),
            alarm_description=alarm.description,
            comparison_operator="GreaterThanOrEqualToThreshold",
            threshold=alarm.threshold,
            evaluation_periods=1,
            treat_missing_data="notBreaching",
            metrics=[
                cloudwatch.CfnAlarm.MetricDataQueryProperty(
                    id="q", expression=alarm.query, period=300, return_data=True
                )
            ],
            alarm_actions=[self.topic.topic_arn],
        )
        self.query_alarms.append(created)
