"""router_step: an LLM router picks a route (`{route, reason}`); over
`switchyard.runtime.run_llm_router`."""

from __future__ import annotations

import logging
import sys
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from switchyard.contract import StepInvocation
from switchyard.runtime import run_llm_router
from switchyard.runtime.errors import StepError
from switchyard.runtime.wiring import step_services

logger = Logger(service="switchyard.router_step", logger_handler=logging.StreamHandler(sys.stderr))
metrics = Metrics(namespace="switchyard", service="router_step")
tracer = Tracer(service="switchyard.router_step")


@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False)
@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    invocation = StepInvocation.model_validate(event)
    logger.append_keys(run_id=invocation.context.run.id, step_id=invocation.step_id)
    try:
        result = run_llm_router(invocation, step_services())
    except StepError as error:
        logger.warning("the router failed", extra={"error_type": str(error.name)})
        raise error.as_lambda_exception() from None
    metrics.add_dimension(name="workflow", value=invocation.workflow.name)
    metrics.add_metric(name="StepCostUSD", unit=MetricUnit.NoUnit, value=result.cost_usd)
    return result.model_dump(mode="json")
