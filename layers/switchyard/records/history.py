"""An execution's history in Step Functions, read as the facts the run records take.

Step Functions keeps, in order, what the local engine's transitions carry: every Task scheduled
with its resolved `Parameters`, every result a step function returned (`TaskSucceeded`: the
`StepResult`; `TaskFailed`: the error and its cause, with what a failed attempt spent), every
state's output, and the execution's end. `HistoryProjection` walks those events and calls
`RunRecords` exactly where the engine calls it, so a deployed run gets the records the engine
would have written:

- `ExecutionStarted`: `started`; `ExecutionRedriven`: `redriven`;
- `TaskScheduled`: `scheduled`;
- `TaskSucceeded`, `TaskFailed`: `task_result` (of a gate's task, once its notification was
  submitted: the answer it got through its token);
- `TaskTimedOut` of a gate's task: its gate row is decided by the timeout;
- `*StateExited`: `written`, the value the state wrote at its `ResultPath` (or its catcher's);
- `ExecutionSucceeded`, `...Failed`, `...Aborted`, `...TimedOut`: `finished`.

A state's exit shows its output after `OutputPath`; the value written at `ResultPath` is read
back from it (`written_value`), which covers every state switchyard compiles (an `OutputPath`
inside, or around, the written path). Each fact carries its event's timestamp.

The event shapes are GetExecutionHistory's (https://docs.aws.amazon.com/step-functions/latest/
apireference/API_GetExecutionHistory.html): `{id, previousEventId, type, timestamp,
<type>EventDetails}`, data as JSON text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from switchyard.records.projection import (
    ExecutionEnd,
    RunEnd,
    RunRecords,
    RunRef,
    RunStart,
    TaskCall,
    TaskKind,
)

log = logging.getLogger(__name__)

_TERMINAL: dict[str, ExecutionEnd] = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionAborted": "ABORTED",
    "ExecutionTimedOut": "TIMED_OUT",
}
_FAILURES = frozenset(
    {
        "TaskFailed",
        "TaskTimedOut",
        "TaskStartFailed",
        "TaskSubmitFailed",
        "LambdaFunctionFailed",
        "LambdaFunctionTimedOut",
        "LambdaFunctionStartFailed",
        "LambdaFunctionScheduleFailed",
        "MapStateFailed",
        "ParallelStateFailed",
        "MapRunFailed",
    }
)
"""Events after which a state's exit means a catcher caught its error."""
_PATH = re.compile(r"^\$((?:\.[^.\[\]]+)*)$")
_WILDCARD_BLIND = frozenset({"States.Runtime", "States.DataLimitExceeded"})


class _Unknown:
    pass


UNKNOWN = _Unknown()
"""A written value the state's output does not show."""


@dataclass(frozen=True)
class StateWrites:
    """Where a state writes its result: `ResultPath` ("$" when absent, None when null), its
    `OutputPath`, and each catcher's `(ErrorEquals, ResultPath)`."""

    result_path: str | None
    output_path: str | None
    catchers: tuple[tuple[tuple[str, ...], str | None], ...] = ()


def state_writes(definition: Mapping[str, Any]) -> dict[str, StateWrites]:
    """Every state of a machine that writes a result, by name, the states of Parallel branches
    and Map item processors included (ASL: a state's name is unique in the whole machine)."""
    found: dict[str, StateWrites] = {}
    states = definition.get("States")
    for name, state in states.items() if isinstance(states, dict) else []:
        if not isinstance(state, dict):
            continue
        for branch in state.get("Branches") or []:
            found.update(state_writes(branch))
        for processor in (state.get("ItemProcessor"), state.get("Iterator")):
            if isinstance(processor, dict):
                found.update(state_writes(processor))
        if state.get("Type") not in ("Pass", "Task", "Parallel", "Map"):
            continue
        catchers = tuple(
            (tuple(catcher.get("ErrorEquals") or ()), catcher.get("ResultPath", "$"))
            for catcher in state.get("Catch") or []
            if isinstance(catcher, dict)
        )
        found[name] = StateWrites(
            result_path=state.get("ResultPath", "$"),
            output_path=state.get("OutputPath", "$"),
            catchers=catchers,
        )
    return found


def error_matches(error_equals: Sequence[str], error: str) -> bool:
    """Whether a catcher's `ErrorEquals` matches the error name (the rules Step Functions and
    the engine's `switchyard.engine.asl.retry_catch.error_matches` apply)."""
    if error == "States.Runtime":
        return False
    for name in error_equals:
        if name == error:
            return True
        if error in _WILDCARD_BLIND:
            continue
        if name == "States.ALL" or (name == "States.TaskFailed" and error != "States.Timeout"):
            return True
    return False


def _keys(path: str | None) -> tuple[str, ...] | None:
    match = _PATH.match(path) if path is not None else None
    if match is None:
        return None
    return tuple(part for part in match.group(1).split(".") if part)


def written_value(output: Any, result_path: str | None, output_path: str | None) -> Any:
    """The value a state wrote at `result_path`, read back from its output (after
    `output_path`): inside the output when the output path leads to or above it, built around
    the output when the output is a part of it; else `UNKNOWN`."""
    written, shown = _keys(result_path), _keys(output_path)
    if written is None or shown is None:
        return UNKNOWN
    if written[: len(shown)] == shown:
        value = output
        for key in written[len(shown) :]:
            if not isinstance(value, dict) or key not in value:
                return UNKNOWN
            value = value[key]
        return value
    if shown[: len(written)] == written:
        value = output
        for key in reversed(shown[len(written) :]):
            value = {key: value}
        return value
    return UNKNOWN


def _details(event: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, dict):
            return value
    return {}


def _data(text: Any) -> Any:
    """A JSON field of an event (None when absent, the text itself when it is not JSON: a
    truncated value)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _kind(details: Mapping[str, Any]) -> TaskKind:
    resource_type = str(details.get("resourceType", ""))
    resource = str(details.get("resource", ""))
    if resource.endswith(".waitForTaskToken"):
        return "callback"
    if resource_type == "lambda":
        return "lambda"
    if resource_type == "states" and resource.startswith("startExecution"):
        return "child"
    if resource_type == "sqs":
        return "sqs"
    return "unsupported"


@dataclass
class ExecutionState:
    """What the projected events say of the execution as a whole: its mirror row's columns."""

    status: str = "RUNNING"
    output: Any = None
    error: str | None = None
    cause: str | None = None
    stopped_at: datetime | None = None
    redrive_count: int = 0


class HistoryProjection:
    """Projects events of one execution's history into its run records.

    `events` is the whole history read so far (for a result's Task and a state's failure, which
    may have been projected earlier); `project(start_id)` projects the events from `start_id`
    on. `functions` maps a deployed function's name to its folder name (`agent_step`, ...)."""

    def __init__(
        self,
        records: RunRecords,
        run: RunRef,
        start: RunStart,
        writes: Mapping[str, StateWrites],
        events: Iterable[Mapping[str, Any]],
        *,
        functions: Mapping[str, str] | None = None,
        state: ExecutionState | None = None,
    ) -> None:
        self._records = records
        self._run = run
        self._start = start
        self._writes = writes
        self._events = {int(event["id"]): event for event in events}
        self._functions = dict(functions or {})
        self.state = state or ExecutionState()

    def project(self, start_id: int) -> int:
        """Project the events from `start_id` on, in order; the id after the last one."""
        last = start_id - 1
        for event_id in sorted(i for i in self._events if i >= start_id):
            self._event(self._events[event_id])
            last = event_id
        return last + 1

    # --- one event -----------------------------------------------------------------------------

    def _event(self, event: Mapping[str, Any]) -> None:
        kind = str(event["type"])
        details = _details(event)
        at = event.get("timestamp")
        at = at if isinstance(at, datetime) else None
        if kind == "ExecutionStarted":
            self._records.started(self._run, self._start)
        elif kind == "ExecutionRedriven":
            self._records.redriven(self._run)
            self.state = ExecutionState(
                redrive_count=int(details.get("redriveCount") or self.state.redrive_count + 1)
            )
        elif kind == "TaskScheduled":
            self._records.scheduled(self._run, self._call(details), at=at)
        elif kind in ("TaskSucceeded", "TaskFailed"):
            self._result(event, details, ok=kind == "TaskSucceeded", at=at)
        elif kind == "TaskTimedOut":
            call = self._scheduled_call(event)
            if call is not None and call.kind == "callback" and call.token:
                self._records.revoked([call.token], timed_out=True)
        elif kind.endswith("StateExited"):
            self._exited(event, details, at=at)
        elif kind in _TERMINAL:
            status = _TERMINAL[kind]
            error = details.get("error")
            if status == "TIMED_OUT" and not error:
                error = "States.Timeout"  # what DescribeExecution says of a timed-out run
            self.state = ExecutionState(
                status=status,
                output=_data(details.get("output")) if status == "SUCCEEDED" else None,
                error=error,
                cause=details.get("cause"),
                stopped_at=at,
                redrive_count=self.state.redrive_count,
            )
            end = RunEnd(
                status=status,
                output=self.state.output,
                error=self.state.error,
                cause=self.state.cause,
                stopped_at=at,
            )
            self._records.finished(self._run, end, at=at)

    def _call(self, details: Mapping[str, Any]) -> TaskCall:
        parameters = _data(details.get("parameters"))
        kind = _kind(details)
        function = ""
        payload = None
        if isinstance(parameters, dict):
            if kind in ("lambda", "callback"):
                name = str(parameters.get("FunctionName", "")).rsplit(":", 1)[-1]
                function = self._functions.get(name, name)
            payload = parameters.get("Payload")
        token = payload.get("task_token") if isinstance(payload, dict) else None
        return TaskCall(kind, function, parameters, str(token) if token else None)

    def _chain(self, event: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
        """The events before `event` in its thread (its previous event, that one's, ...)."""
        previous = int(event.get("previousEventId") or 0)
        while previous and previous in self._events:
            found = self._events[previous]
            yield found
            previous = int(found.get("previousEventId") or 0)

    def _scheduled_call(self, event: Mapping[str, Any]) -> TaskCall | None:
        for earlier in self._chain(event):
            if earlier["type"] == "TaskScheduled":
                return self._call(_details(earlier))
        return None

    def _result(
        self, event: Mapping[str, Any], details: Mapping[str, Any], *, ok: bool, at: Any
    ) -> None:
        call = self._scheduled_call(event)
        if call is None:
            log.warning("no TaskScheduled before event %s of %s", event["id"], self._run.arn)
            return
        if call.kind == "callback":
            submitted = False
            for earlier in self._chain(event):
                if earlier["type"] == "TaskScheduled":
                    break
                submitted = submitted or earlier["type"] == "TaskSubmitted"
            if ok and not submitted:
                return  # the notification function returned; the gate waits for its answer
            self._records.task_result(
                self._run,
                call,
                ok,
                _data(details.get("output")),
                cause=details.get("cause"),
                error=details.get("error"),
                answered=submitted,
                at=at,
            )
            return
        self._records.task_result(
            self._run, call, ok, _data(details.get("output")), cause=details.get("cause"), at=at
        )

    def _exited(self, event: Mapping[str, Any], details: Mapping[str, Any], *, at: Any) -> None:
        writes = self._writes.get(str(details.get("name")))
        if writes is None:
            return
        previous = self._events.get(int(event.get("previousEventId") or 0))
        path: str | None = writes.result_path
        if previous is not None and previous["type"] in _FAILURES:
            path = self._catcher_path(writes, _details(previous).get("error"))
            if path is UNKNOWN:
                return
        if path is None:
            return
        value = written_value(_data(details.get("output")), path, writes.output_path)
        if value is not UNKNOWN:
            self._records.written(self._run, path, value, at=at)

    @staticmethod
    def _catcher_path(writes: StateWrites, error: Any) -> Any:
        """The ResultPath of the catcher that caught `error` (the only catcher when the event
        does not name the error)."""
        if not isinstance(error, str):
            return writes.catchers[0][1] if len(writes.catchers) == 1 else UNKNOWN
        for error_equals, result_path in writes.catchers:
            if error_matches(error_equals, error):
                return result_path
        return UNKNOWN


__all__ = [
    "UNKNOWN",
    "ExecutionState",
    "HistoryProjection",
    "StateWrites",
    "error_matches",
    "state_writes",
    "written_value",
]
