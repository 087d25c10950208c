"""approval_api: the approval routes behind the HTTP API, the same FastAPI router as
`switchyard dev` serves (`switchyard.approvals.routes`), adapted to API Gateway by Mangum.

The link and Slack routes are public at the gateway (the signed token and Slack's v0 signature
authenticate them); `GET /approvals` is an operator route, IAM-authorized at the gateway. A
decision reaches the run through Step Functions' task-token API (this function may call it on the
workflows' machines only). The task token never leaves the database; the log has no path, body or
header of a request (Powertools logs no event)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]
from fastapi import FastAPI
from mangum import Mangum

from switchyard.approvals import build_approvals_router
from switchyard.gates.callbacks import Boto3Callbacks
from switchyard.runtime.instruments import function_logger
from switchyard.runtime.wiring import database_pool

logger = function_logger("approval_api")


@cache
def _adapter() -> Mangum:
    pool = database_pool()
    if pool is None:
        raise RuntimeError("approval_api needs the run database (its secret)")
    app = FastAPI(title="switchyard approvals", openapi_url=None, docs_url=None, redoc_url=None)
    app.include_router(build_approvals_router(pool, Boto3Callbacks(boto3.client("stepfunctions"))))
    return Mangum(app, lifespan="off", api_gateway_base_path="/")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer: dict[str, Any] = _adapter()(event, context)
    return answer
