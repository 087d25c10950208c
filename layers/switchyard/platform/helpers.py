"""The render function's helpers (see `switchyard.contract.helpers`): what a JSONPath machine
cannot compute by itself. Pure functions of their request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema_rs

from switchyard.contract.errors import (
    HEARTBEAT_TIMEOUT,
    TASK_TIMEOUT,
    StepErrorName,
    error_type_of,
    read_cause,
    unwrap_branch_failure,
)
from switchyard.contract.helpers import (
    CaughtError,
    CaughtRequest,
    CaughtStep,
    DeadlineRequest,
    DeadlineResult,
    FailureRequest,
    FailureResult,
    OutputCheckRequest,
    OutputCheckResult,
    TailAction,
)
from switchyard.contract.step_errors import InvalidOutputError
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


ON_TIMEOUT_ERRORS = {"reject": StepErrorName.REJECTED, "fail": StepErrorName.TIMEOUT}
ON_TIMEOUT_VERDICTS = {"reject": "rejected", "fail": "failed"}


def caught(request: CaughtRequest) -> dict[str, Any]:
    """The state after a step's failure reached its block's shared tail.

    The `Catch` wrote Step Functions' `{Error, Cause}` where the step's record goes; this finds
    that step, and either keeps the error as caught for a gate (budget, human) or reads it as
    `failure` does, writes the step's failed record, builds its dead letter and says what comes
    next (`$.error.action`)."""
    state = dict(request.state)
    records = dict(state.get("steps") or {})
    step_id = _caught_step(records, request.steps)
    raw = unwrap_branch_failure(records.pop(step_id))
    info = request.steps[step_id]
    context: dict[str, Any] = {"run": state.get("run")}
    if info.scope:
        context["scope"] = state.get("scope")
    name = str(raw.get("Error") or "")
    cause = raw.get("Cause")
    if info.parks and name in (StepErrorName.BUDGET, StepErrorName.HUMAN_REQUIRED):
        action: TailAction = "human" if name == StepErrorName.HUMAN_REQUIRED else "budget"
        if action == "budget" and info.on_exceeded == "fail":
            action = "stop"
        gate = {"Error": name, "Cause": cause}
        error = CaughtError(
            Error=name, Cause=str(cause or ""), step=step_id, action=action,
            context=context, gate=gate,
        )  # fmt: skip
        state["steps"] = records
        state["error"] = error.model_dump(mode="json")
        return state
    if info.on_timeout in ON_TIMEOUT_ERRORS and name in (TASK_TIMEOUT, HEARTBEAT_TIMEOUT):
        verdict = ON_TIMEOUT_VERDICTS[info.on_timeout]
        name = ON_TIMEOUT_ERRORS[info.on_timeout].value
        cause = f"nobody decided within the time of every tier; the gate {verdict}"
    read = failure(FailureRequest(helper="failure", error={"Error": name, "Cause": cause}))
    record = {
        "status": "failed",
        "output": None,
        "error": {"type": read.Error, "message": read.Cause},
        "attempts": read.attempts,
    }
    records[step_id] = record
    state["steps"] = records
    letter_input: dict[str, Any] = {"inputs": state.get("inputs")}
    if "*" in info.reads:
        letter_input["steps"] = records
    else:
        letter_input["steps"] = {k: records[k] for k in sorted(info.reads) if k in records}
    if info.scope:
        letter_input["scope"] = state.get("scope")
    letter = {
        "workflow": request.workflow.get("name"),
        "version": request.workflow.get("version"),
        "run": state.get("run"),
        "step_id": step_id,
        "error": record["error"],
        "input": letter_input,
    }
    after: TailAction = "fallback" if info.fallback else info.on_error
    state["error"] = CaughtError(
        Error=read.Error, Cause=read.Cause, attempts=read.attempts, step=step_id,
        action=after, context=context,
        gate={"Error": read.Error, "Cause": read.Cause, "attempts": read.attempts},
        letter=letter,
    ).model_dump(mode="json")  # fmt: skip
    return state


def _caught_step(records: dict[str, Any], steps: dict[str, CaughtStep]) -> str:
    """The step whose record is a caught `{Error, Cause}` (no `status`)."""
    for step_id, record in records.items():
        caught_error = isinstance(record, dict) and "Error" in record and "status" not in record
        if step_id in steps and caught_error:
            return step_id
    raise ValueError(
        "no step record holds a caught error; the tail serves " + ", ".join(sorted(steps))
    )


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
