"""dashboard_api: the dashboard's data API (`/api/dashboard/...`) behind the HTTP API's JWT
authorizer, the same FastAPI routes as `switchyard dev` serves (`switchyard.dashboard.aws`),
adapted to API Gateway by Mangum. It reads Aurora; a gate decided from the page reaches its run
through Step Functions' task-token API (this function may call it on the workflows' machines
only); a running run's records are caught up with its execution's history before it is read
(the recorder's projection); large values are read from the output bucket. The log has no
path, body or header of a request (Powertools logs no event)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]
from mangum import Mangum

from switchyard.approvals.people import People
from switchyard.constants import OUTPUT_BUCKET_ENV
from switchyard.dashboard.aws import lambda_app
from switchyard.gates.callbacks import Boto3Callbacks
from switchyard.records.catch_up import CatchUp
from switchyard.records.recorder import Recorder, function_names
from switchyard.runtime.instruments import function_logger
from switchyard.runtime.large_outputs import S3OutputStore
from switchyard.runtime.wiring import database_pool

logger = function_logger("dashboard_api")


@cache
def _adapter() -> Mangum:
    pool = database_pool()
    if pool is None:
        raise RuntimeError("dashboard_api needs the run database (its secret)")
    client = boto3.client("stepfunctions")
    recorder = Recorder(pool, client, functions=function_names(os.environ))
    bucket = os.environ.get(OUTPUT_BUCKET_ENV)
    app = lambda_app(
        pool,
        Boto3Callbacks(client),
        People.from_env(),
        outputs=S3OutputStore(bucket) if bucket else None,
        catch_up=CatchUp(pool, recorder, client).run,
    )
    return Mangum(app, lifespan="off")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer: dict[str, Any] = _adapter()(event, context)
    return answer
