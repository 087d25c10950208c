"""run_start: the first state of every workflow. Checks the run's input against the workflow's
inputs, fills defaults, and returns the run's identity. Errors leave as `invalid_input`."""

from __future__ import annotations

import logging
import sys
from typing import Any

from aws_lambda_powertools import Logger

from switchyard.platform.run_start import handle

logger = Logger(service="switchyard.run_start", logger_handler=logging.StreamHandler(sys.stderr))


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
