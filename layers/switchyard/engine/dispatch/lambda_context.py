"""The `context` argument a Lambda handler receives, for handlers called in-process."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class LambdaContext:
    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int = 1024
    timeout_seconds: float = 900.0
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = ""
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        self.log_group_name = self.log_group_name or f"/switchyard/local/{self.function_name}"
        self.log_stream_name = self.log_stream_name or self.aws_request_id

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))
