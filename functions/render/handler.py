"""render: templates that JSONPath cannot express (sub-workflow inputs, map items, outputs),
rendered against a step's context. Errors leave as `template`."""

from __future__ import annotations

from typing import Any

from switchyard.platform.render import handle
from switchyard.runtime.instruments import function_logger

logger = function_logger("render")


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
