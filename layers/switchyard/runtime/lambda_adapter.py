"""What the agent, tool and router Lambda handlers share: validate the event, log with the run and
step ids, run the step, publish its cost, tokens and duration, and raise a failed step as the
contract's error name (the `errorType` that the compiled `Retry` and `Catch` rules match).

    handler = step_handler("agent_step", lambda invocation, services, context:
                           run_agent_step(invocation, services, lambda_context=context))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from switchyard.constants import Metric, MetricDimension
from switchyard.contract import StepInvocation, StepResult
from switchyard.contract.step_errors import (
    CircuitOpenError,
    ConcurrentUpdateError,
    RateLimitedError,
    Spend,
    StepError,
    ThrottledError,
)
from switchyard.runtime.database import transient_database_error
from switchyard.runtime.instruments import instruments
from switchyard.runtime.replay import replayed_step
from switchyard.runtime.services import StepServices

StepRunner = Callable[[StepInvocation, StepServices, Any], StepResult]
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def step_handler(function: str, run: StepRunner) -> Handler:
    """The Lambda handler of `functions/<function>`, running steps with `run`."""
    logger, metrics, tracer = instruments(function)

    @tracer.capture_lambda_handler(capture_response=False)
    @logger.inject_lambda_context(log_event=False)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        invocation = StepInvocation.model_validate(event)
        logger.append_keys(run_id=invocation.context.run.id, step_id=invocation.step_id)
        started = time.perf_counter()
        result: StepResult | None = None
        spent: Spend | None = None
        failure: StepError | None = None
        try:
            result = run_step(run, invocation, context)
            spent = Spend(result.cost_usd, result.usage) if result.usage is not None else None
            if result.replayed_from is not None:
                logger.info("replayed", extra={"replayed_from": result.replayed_from})
        except StepError as error:
            spent, failure = error.spent, error
            logger.warning("the step failed", extra={"error_type": str(error.name)})
            raise error.as_lambda_exception(attempt=invocation.attempt) from None
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            publish_metrics(
                metrics, invocation, elapsed_ms, ok=result is not None, spent=spent, error=failure
            )
        return result.model_dump(mode="json")

    decorated: Handler = handler  # Powertools' decorators are untyped
    return decorated


def run_step(run: StepRunner, invocation: StepInvocation, context: Any) -> StepResult:
    """`run` with the process's services, unless the step replays a recorded result (a step
    before a reset's step: `switchyard.runtime.replay`); a database that failed under it
    (unreachable, a connection lost, the pool busy past its timeout) is `transient`, which the
    compiled `Retry` waits out, not a failure for good."""
    from switchyard.runtime.wiring import step_services

    try:
        services = step_services()
        segmented = bool(invocation.step.get("continue_as_new"))
        replayed = replayed_step(
            invocation.context, invocation.step_id, services.recorded, segmented=segmented
        )
        return replayed if replayed is not None else run(invocation, services, context)
    except psycopg.OperationalError as exc:
        raise transient_database_error(exc, where=f"step {invocation.step_id}") from exc


def publish_metrics(
    metrics: Metrics,
    invocation: StepInvocation,
    elapsed_ms: float,
    *,
    ok: bool,
    spent: Spend | None,
    error: StepError | None = None,
) -> None:
    """Publish one attempt's duration; its cost when it succeeded or spent before it failed; its
    tokens when it called models (`spent`); and a count when it was a retry, was rate-limited,
    met a version conflict, was throttled by a quota or refused by an open circuit (`error`), as
    EMF (docs/runbooks.md alarms on the counts).

    Nothing is added while metrics are disabled (the local engine disables them): Powertools
    keeps one metric set per process and, disabled, never clears it, and once a metric holds 100
    values it prints the set anyway, on stdout, where `switchyard run --json` prints the run."""
    if is_metrics_disabled():
        return
    metrics.add_dimension(name=MetricDimension.WORKFLOW, value=invocation.workflow.name)
    metrics.add_metric(name=Metric.STEP_DURATION, unit=MetricUnit.Milliseconds, value=elapsed_ms)
    if ok or spent is not None:
        cost = spent.cost_usd if spent is not None else 0.0
        metrics.add_metric(name=Metric.COST_USD, unit=MetricUnit.NoUnit, value=cost)
    if spent is not None:
        usage = spent.usage
        metrics.add_metric(
            name=Metric.INPUT_TOKENS, unit=MetricUnit.Count, value=usage.input_tokens
        )
        metrics.add_metric(
            name=Metric.OUTPUT_TOKENS, unit=MetricUnit.Count, value=usage.output_tokens
        )
    counted = (
        (Metric.RETRY_ATTEMPTS, invocation.attempt > 1),
        (Metric.RATE_LIMITED, isinstance(error, RateLimitedError)),
        (Metric.VERSION_CONFLICTS, isinstance(error, ConcurrentUpdateError)),
        (Metric.THROTTLED_STEPS, isinstance(error, ThrottledError)),
        (Metric.CIRCUIT_OPEN_STEPS, isinstance(error, CircuitOpenError)),
    )
    for name, happened in counted:
        if happened:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    metrics.flush_metrics()
