"""Step Functions' own error names, and the exceptions the ASL primitives raise.

A state fails with an error name and a cause string. `AslFailure` carries both; the interpreter
turns it into the state's failure event, and `Retry`/`Catch` match on `AslFailure.error`.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any


class StatesError(StrEnum):
    """The predefined `States.*` error names (ASL spec, appendix A, plus the service's own)."""

    ALL = "States.ALL"
    HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
    TIMEOUT = "States.Timeout"
    TASK_FAILED = "States.TaskFailed"
    PERMISSIONS = "States.Permissions"
    RESULT_PATH_MATCH_FAILURE = "States.ResultPathMatchFailure"
    PARAMETER_PATH_FAILURE = "States.ParameterPathFailure"
    QUERY_EVALUATION_ERROR = "States.QueryEvaluationError"
    BRANCH_FAILED = "States.BranchFailed"
    NO_CHOICE_MATCHED = "States.NoChoiceMatched"
    INTRINSIC_FAILURE = "States.IntrinsicFailure"
    EXCEED_TOLERATED_FAILURE_THRESHOLD = "States.ExceedToleratedFailureThreshold"
    ITEM_READER_FAILED = "States.ItemReaderFailed"
    RESULT_WRITER_FAILED = "States.ResultWriterFailed"
    RUNTIME = "States.Runtime"
    DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"


class AslFailure(Exception):  # noqa: N818 - a failure outcome of a state, not a programming error
    """A state failed with `error` (a `States.*` name or a task's own error name) and `cause`.

    Causes are the text Step Functions writes, without the "An error occurred while executing the
    state 'X' (entered at the event id #N)." prefix: only the interpreter knows the state and
    the event id, so it adds that prefix to `States.Runtime` failures itself.
    """

    def __init__(self, error: str, cause: str) -> None:
        super().__init__(f"{error}: {cause}")
        self.error = str(error)
        self.cause = cause

    @property
    def retriable(self) -> bool:
        """`States.Runtime` always fails the execution: no Retry or Catch ever sees it."""
        return self.error != StatesError.RUNTIME


class InvalidPathError(ValueError):
    """A path string is not valid JSONPath (raised when it is compiled, i.e. at definition time)."""


def to_json_text(value: Any) -> str:
    """Compact JSON the way Step Functions writes values into causes and intrinsic results."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
