"""How a decision reaches the run: Step Functions' task-token API (AWS or the local engine)."""

from __future__ import annotations

import json
from typing import Any, Protocol


class TaskCallbacks(Protocol):
    def send_success(self, token: str, output: Any) -> None: ...

    def send_failure(self, token: str, error: str, cause: str) -> None: ...

    def stop(self, execution_arn: str, error: str, cause: str) -> None: ...


class Boto3Callbacks:
    """Through a boto3 `stepfunctions` client: AWS, or the local engine's endpoint."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def send_success(self, token: str, output: Any) -> None:
        self._client.send_task_success(taskToken=token, output=json.dumps(output))

    def send_failure(self, token: str, error: str, cause: str) -> None:
        self._client.send_task_failure(taskToken=token, error=error, cause=cause)

    def stop(self, execution_arn: str, error: str, cause: str) -> None:
        self._client.stop_execution(executionArn=execution_arn, error=error, cause=cause)
