"""Task: a function call, a callback (`.waitForTaskToken`), a child execution, a queue message.

Entering schedules the task; the engine runs it after the transition is committed and reports
back with `succeeded` or `failed`. Platform functions that are pure and fast (run_start, render)
may run inline, inside the transition, when the engine says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from switchyard.engine.asl import Task, resolve_seconds
from switchyard.engine.interpreter.dataflow import effective_input, finish, parameters
from switchyard.engine.interpreter.events import details, resource_parts, to_text
from switchyard.engine.interpreter.model import Frame, FrameStatus, TaskKind, TaskRequest, TaskSpec
from switchyard.engine.interpreter.outcomes import SUSPENDED, Failed, Outcome
from switchyard.engine.interpreter.step import Step

REGION = "local"


@dataclass(frozen=True)
class InlineResult:
    ok: bool
    value: Any = None
    error: str = ""
    cause: str = ""


InlineRunner = Callable[[TaskRequest], InlineResult | None]


def kind_of(resource: str) -> TaskKind:
    service, action = resource_parts(resource)
    if service == "lambda" and resource.startswith("arn:aws:lambda:"):
        return "lambda_direct"
    if action.endswith(".waitForTaskToken"):
        return "callback"
    if service == "lambda" and action == "invoke":
        return "lambda"
    if service == "states" and action.startswith("startExecution"):
        return "child"
    if service == "sqs" and action == "sendMessage":
        return "sqs"
    return "unsupported"


def _event_prefix(kind: str) -> str:
    return "LambdaFunction" if kind == "lambda_direct" else "Task"


def _resource_fields(resource: str) -> dict[str, Any]:
    service, action = resource_parts(resource)
    return {"resourceType": service, "resource": action}


def enter(step: Step, frame: Frame, state: Task, inline: InlineRunner | None = None) -> Outcome:
    """Schedule the task (also used to retry it: a retry writes no new StateEntered)."""
    effective = effective_input(state, frame)
    kind = kind_of(state.resource)
    token = step.new_token(frame) if kind == "callback" else None
    context = step.context(frame, token=token)
    params = parameters(state.parameters, effective, step, context)
    timeout = resolve_seconds(
        state.timeout_seconds, state.timeout_seconds_path, effective, "TimeoutSecondsPath"
    )
    heartbeat = resolve_seconds(
        state.heartbeat_seconds, state.heartbeat_seconds_path, effective, "HeartbeatSecondsPath"
    )
    frame.attempt += 1
    frame.status = FrameStatus.TASK
    prefix = _event_prefix(kind)
    scheduled: dict[str, Any] = {**_resource_fields(state.resource), "region": REGION}
    if kind == "lambda_direct":
        scheduled = {"resource": state.resource, "input": to_text(params)}
    else:
        scheduled["parameters"] = to_text(params)
    if timeout:
        scheduled["timeoutInSeconds"] = timeout
    if heartbeat:
        scheduled["heartbeatInSeconds"] = heartbeat
    event = step.emit(f"{prefix}Scheduled", details(f"{prefix}Scheduled", **scheduled))
    frame.task = TaskSpec(
        kind=kind,
        resource=state.resource,
        token=token,
        scheduled_event=event,
        timeout=timeout,
        heartbeat=heartbeat,
    )
    frame.touch()
    request = TaskRequest(
        step.execution.arn, frame.id, frame.attempt, kind, state.resource, params, token, timeout
    )
    result = inline(request) if inline is not None else None
    started = {} if kind == "lambda_direct" else _resource_fields(state.resource)
    step.emit(f"{prefix}Started", details(f"{prefix}Started", **started))
    if result is not None:
        if result.ok:
            return succeeded(step, frame, state, result.value)
        return failed(step, frame, state, result.error, result.cause)
    step.dispatch(request)
    if timeout:
        step.set_timer(frame, "task_timeout", step.now + timedelta(seconds=timeout))
    if heartbeat:
        step.set_timer(frame, "heartbeat", step.now + timedelta(seconds=heartbeat))
    return SUSPENDED


def submitted(step: Step, frame: Frame, state: Task, output: Any) -> None:
    """A callback task's function returned: the task now waits for its token."""
    step.emit(
        "TaskSubmitted",
        details("TaskSubmitted", **_resource_fields(state.resource), output=to_text(output)),
    )


def succeeded(step: Step, frame: Frame, state: Task, result: Any) -> Outcome:
    prefix = _event_prefix(frame.task.kind if frame.task else "")
    fields = {} if prefix == "LambdaFunction" else _resource_fields(state.resource)
    step.emit(
        f"{prefix}Succeeded",
        details(
            f"{prefix}Succeeded",
            **fields,
            output=to_text(result),
            outputDetails={"truncated": False},
        ),
    )
    _settle(step, frame)
    return finish(
        step,
        frame,
        state,
        result,
        result_path=state.result_path,
        selector=state.result_selector,
    )


def failed(
    step: Step, frame: Frame, state: Task, error: str, cause: str, *, timed_out: bool = False
) -> Outcome:
    prefix = _event_prefix(frame.task.kind if frame.task else "")
    kind = f"{prefix}TimedOut" if timed_out else f"{prefix}Failed"
    fields = {} if prefix == "LambdaFunction" else _resource_fields(state.resource)
    step.emit(kind, details(kind, **fields, error=error, cause=cause))
    _settle(step, frame)
    return Failed(error, cause)


def heartbeat(step: Step, frame: Frame) -> None:
    seconds = frame.task.heartbeat if frame.task else None
    if seconds:
        step.set_timer(frame, "heartbeat", step.now + timedelta(seconds=int(seconds)))


def _settle(step: Step, frame: Frame) -> None:
    task = frame.task
    if task is not None and task.timeout:
        step.cancel_timer(frame, "task_timeout")
    if task is not None and task.heartbeat:
        step.cancel_timer(frame, "heartbeat")
    if task is not None and task.token:
        step.transition.revoked_tokens.append(task.token)
    step.transition.settled_tasks.append((frame.id, frame.attempt))
    frame.task = None
    frame.touch()
