"""recorder: the run records of deployed runs. Step Functions' execution status-change events
(EventBridge, this stack's machines only) name an execution; its history is projected into
`workflow_runs` and `task_runs` in Aurora by the same code as the local engine's records
(`switchyard.records`). Nothing of a run's data reaches the log: ids, counts and statuses."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]

from switchyard.records.recorder import Recorder, function_names, handle_event
from switchyard.runtime.instruments import instruments
from switchyard.runtime.wiring import database_pool

logger, metrics, _ = instruments("recorder")


@cache
def _recorder() -> Recorder:
    pool = database_pool()
    if pool is None:
        raise RuntimeError("recorder needs the run database (DATABASE_URL or its secret)")
    client = boto3.client("stepfunctions")
    return Recorder(pool, client, functions=function_names(os.environ))


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle_event(event, _recorder(), metrics=metrics)
