"""tool_step: one tool call through the tool gateway (policy, idempotency, audit). Over
`switchyard.runtime.run_tool_step`; errors leave as the contract's error names."""

from __future__ import annotations

import logging
import sys
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from switchyard.contract import StepInvocation
from switchyard.runtime import run_tool_step
from switchyard.runtime.errors import StepError
from switchyard.runtime.wiring import step_services

logger = Logger(service="switchyard.tool_step", logger_handler=logging.StreamHandler(sys.stderr))
metrics = Metrics(namespace="switchyard", service="tool_step")
tracer = Tracer(service="switchyard.tool_step")


@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    invocation = StepInvocation.model_validate(event)
    logger.append_keys(run_id=invocation.context.run.id, step_id=invocation.step_id)
    try:
        result = run_tool_step(invocation, step_services(), lambda_context=context)
    except StepError as error:
        logger.warning("the step failed", extra={"error_type": str(error.name)})
        raise error.as_lambda_exception() from None
    usage = result.usage
    metrics.add_dimension(name="workflow", value=invocation.workflow.name)
    metrics.add_metric(name="StepCostUSD", unit=MetricUnit.NoUnit, value=result.cost_usd)
    if usage is not None:
        metrics.add_metric(name="InputTokens", unit=MetricUnit.Count, value=usage.input_tokens)
        metrics.add_metric(name="OutputTokens", unit=MetricUnit.Count, value=usage.output_tokens)
    return result.model_dump(mode="json")
