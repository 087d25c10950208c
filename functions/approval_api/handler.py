"""approval_api: the approval routes and the operators' routes behind the HTTP API
(`switchyard.approvals.deployed`: the same FastAPI routes as `switchyard dev` serves), adapted
to API Gateway by Mangum.

The link and Slack routes are public at the gateway (the signed token and Slack's v0 signature
authenticate them); `GET /approvals` and the operators' decide, resume and cancel routes are
IAM-authorized at the gateway. A decision reaches the run through Step Functions' task-token API
and a cancel through StopExecution (this function may call them on the workflows' machines only).
The task token never leaves the database; the log has no path, body or header of a request
(Powertools logs no event), only each operator request's route and IAM caller."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]
from mangum import Mangum

from switchyard.approvals.deployed import deployed_app
from switchyard.constants import BUDGET_TABLE_ENV
from switchyard.runtime.instruments import function_logger
from switchyard.runtime.wiring import database_pool
from switchyard.stores.budget.dynamodb import DynamoDBBudgetLedger

logger = function_logger("approval_api")


@cache
def _adapter() -> Mangum:
    pool = database_pool()
    if pool is None:
        raise RuntimeError("approval_api needs the run database (its secret)")
    budget_table = os.environ.get(BUDGET_TABLE_ENV)
    if not budget_table:
        raise RuntimeError(f"approval_api needs the budget table ({BUDGET_TABLE_ENV})")
    app = deployed_app(
        pool, boto3.client("stepfunctions"), DynamoDBBudgetLedger(budget_table), audit=logger
    )
    return Mangum(app, lifespan="off", api_gateway_base_path="/")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer: dict[str, Any] = _adapter()(event, context)
    return answer
