"""dashboard_api: the dashboard's data API (`/api/dashboard/...`) behind the HTTP API's JWT
authorizer, the same FastAPI routes as `switchyard dev` serves (`switchyard.dashboard.aws`),
adapted to API Gateway by Mangum. It reads Aurora; a gate decided from the page reaches its run
through Step Functions' task-token API (this function may call it on the workflows' machines
only). The log has no path, body or header of a request (Powertools logs no event)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]
from mangum import Mangum

from switchyard.approvals.people import People
from switchyard.dashboard.aws import lambda_app
from switchyard.gates.callbacks import Boto3Callbacks
from switchyard.runtime.instruments import function_logger
from switchyard.runtime.wiring import database_pool

logger = function_logger("dashboard_api")


@cache
def _adapter() -> Mangum:
    pool = database_pool()
    if pool is None:
        raise RuntimeError("dashboard_api needs the run database (its secret)")
    callbacks = Boto3Callbacks(boto3.client("stepfunctions"))
    return Mangum(lambda_app(pool, callbacks, People.from_env()), lifespan="off")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer: dict[str, Any] = _adapter()(event, context)
    return answer
