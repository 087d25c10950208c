"""run_start: the first state of every workflow. Checks the run's input against the workflow's
inputs, fills defaults, and returns the run's identity. Errors leave as `invalid_input`."""

from __future__ import annotations

from typing import Any

from switchyard.platform.run_start import handle
from switchyard.runtime.instruments import function_logger

logger = function_logger("run_start")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
