"""The render function's helpers (see `switchyard.contract.helpers`): what a JSONPath machine
cannot compute by itself. Pure functions of their request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema_rs

from switchyard.contract.errors import error_type_of, read_cause
from switchyard.contract.helpers import (
    DeadlineRequest,
    DeadlineResult,
    FailureRequest,
    FailureResult,
    OutputCheckRequest,
    OutputCheckResult,
)
from switchyard.runtime.errors import InvalidOutputError
from switchyard.runtime.large_outputs import is_ref

MAX_LISTED_ERRORS = 5


def failure(request: FailureRequest) -> FailureResult:
    """The caught error with its Cause made the plain message (`contract.errors.read_cause`).

    A Step Functions error (`States.Timeout`, `States.TaskFailed`, ...) is named by its workflow
    error type instead (`timeout`, `permanent`, ...): the run's `Fail` state raises this name, and
    the States Language reserves names beginning with `States.` (Step Functions and moto refuse a
    Fail state that raises one)."""
    message, attempts = read_cause(request.error.get("Cause"))
    name = str(request.error.get("Error") or "")
    if name.startswith("States."):
        name = error_type_of(name)
    return FailureResult(Error=name, Cause=message, attempts=attempts)


def deadline(request: DeadlineRequest) -> DeadlineResult:
    """`start` + `seconds`, written as Step Functions writes `$$.State.EnteredTime`."""
    start = datetime.fromisoformat(request.start.replace("Z", "+00:00"))
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    at = (start + timedelta(seconds=request.seconds)).astimezone(UTC)
    return DeadlineResult(at=at.isoformat(timespec="milliseconds").replace("+00:00", "Z"))


def check_output(request: OutputCheckRequest) -> OutputCheckResult:
    """`invalid_output` when the value does not match the schema. Parts of the value that were
    moved to the output store (references to large outputs) are not checked: reading them back
    needs the store, and the step that produced them checked its own output."""
    errors = schema_errors(request.value, request.output_schema)
    if errors:
        raise InvalidOutputError(
            f"the output of '{request.step_id}' does not match its output_schema: "
            + "; ".join(errors[:MAX_LISTED_ERRORS]),
            errors=errors,
        )
    return OutputCheckResult()


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Where `value` breaks `schema`, leaving out what lies at or inside a large-output ref."""
    validator = jsonschema_rs.validator_for(schema)
    found: list[str] = []
    for error in validator.iter_errors(value):
        path = list(error.instance_path)
        if _through_reference(value, path):
            continue
        found.append(f"{'/'.join(map(str, path)) or '(top)'}: {error.message}")
    return found


def _through_reference(value: Any, path: list[str | int]) -> bool:
    node = value
    for part in [None, *path]:
        if part is not None:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return False
        if is_ref(node):
            return True
    return False
