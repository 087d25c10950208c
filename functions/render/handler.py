"""render: templates that JSONPath cannot express (sub-workflow inputs, map items, outputs),
rendered against a step's context. Errors leave as `template`."""

from __future__ import annotations

import logging
import sys
from typing import Any

from aws_lambda_powertools import Logger

from switchyard.platform.render import handle

logger = Logger(service="switchyard.render", logger_handler=logging.StreamHandler(sys.stderr))


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
