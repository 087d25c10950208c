"""The interpreter: events in, transitions out.

Each entry point (start, a task's result, a callback, a timer, stop, redrive) mutates one
`Execution` in memory and returns the `Transition` that records what happened: history events,
tasks to dispatch, timers to set. The engine commits the transition and only then acts on it, so a
crash at any moment leaves either the old state or the new one, never half of each.

Frames are threads of control. Each state type lives in its own module under `states/` and
returns an explicit outcome; this module moves frames between states, applies Retry and Catch,
joins Parallel branches and Map items, and ends the execution.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from switchyard.engine.asl import (
    AslFailure,
    Entropy,
    Map,
    Parallel,
    State,
    StatesError,
    Task,
    Wait,
    apply_result_path,
    handle_failure,
)
from switchyard.engine.asl.retry_catch import CatchTo, RetryAfter
from switchyard.engine.interpreter.events import (
    MAX_PAYLOAD_BYTES,
    details,
    state_entered,
    state_exited,
    to_text,
)
from switchyard.engine.interpreter.model import (
    Execution,
    ExecutionStatus,
    Frame,
    FrameStatus,
    Transition,
)
from switchyard.engine.interpreter.outcomes import Ended, Failed, Next, Outcome, Suspended
from switchyard.engine.interpreter.states import (
    choice_state,
    fail_state,
    map_state,
    parallel_state,
    pass_state,
    succeed_state,
    task_state,
    wait_state,
)
from switchyard.engine.interpreter.states.task_state import InlineRunner
from switchyard.engine.interpreter.step import HistoryLimitReachedError, Step

_ENTER = {
    "Pass": pass_state.enter,
    "Choice": choice_state.enter,
    "Wait": wait_state.enter,
    "Succeed": succeed_state.enter,
    "Fail": fail_state.enter,
    "Parallel": parallel_state.enter,
    "Map": map_state.enter,
}
_RETRYABLE = (Task, Parallel, Map)
_HISTORY_FULL = "The execution reached the maximum number of history events (25000)."


class Interpreter:
    def __init__(
        self,
        *,
        clock: Callable[[], datetime],
        entropy: Entropy,
        inline: InlineRunner | None = None,
    ) -> None:
        self._clock = clock
        self._entropy = entropy
        self._inline = inline

    # --- entry points ----------------------------------------------------------------------

    def start(self, execution: Execution, *, role_arn: str = "") -> Transition:
        step = self._step(execution)
        execution.started_at = execution.started_at or step.now
        started: dict[str, Any] = {
            "input": to_text(execution.input),
            "inputDetails": {"truncated": False},
            "roleArn": role_arn,
        }
        step.emit("ExecutionStarted", details("ExecutionStarted", **started), previous=0)
        root = execution.new_frame(
            parent=None, program=(), state=execution.machine.start_at, input=execution.input
        )
        step.runnable.append(root.id)
        if execution.machine.timeout_seconds:
            deadline = execution.started_at + timedelta(seconds=execution.machine.timeout_seconds)
            step.set_timer(root, "execution_timeout", deadline)
        return self._run(step)

    def task_succeeded(
        self, execution: Execution, frame_id: int, attempt: int, result: Any
    ) -> Transition | None:
        waiting = self._waiting_task(execution, frame_id, attempt)
        if waiting is None:
            return None
        step, frame, state = waiting
        return self._settle(
            step, frame, state, lambda: task_state.succeeded(step, frame, state, result)
        )

    def task_failed(
        self,
        execution: Execution,
        frame_id: int,
        attempt: int,
        error: str,
        cause: str,
        *,
        timed_out: bool = False,
    ) -> Transition | None:
        waiting = self._waiting_task(execution, frame_id, attempt)
        if waiting is None:
            return None
        step, frame, state = waiting
        return self._settle(
            step,
            frame,
            state,
            lambda: task_state.failed(step, frame, state, error, cause, timed_out=timed_out),
        )

    def task_submitted(
        self, execution: Execution, frame_id: int, attempt: int, output: Any
    ) -> Transition | None:
        """A callback task's function returned; the task now waits for its token."""
        waiting = self._waiting_task(execution, frame_id, attempt)
        if waiting is None:
            return None
        step, frame, state = waiting
        task_state.submitted(step, frame, state, output)
        return step.transition

    def heartbeat(self, execution: Execution, frame_id: int) -> Transition | None:
        frame = execution.frames.get(frame_id)
        if frame is None or frame.status is not FrameStatus.TASK:
            return None
        step = self._step(execution)
        task_state.heartbeat(step, frame)
        return step.transition

    def timer(
        self, execution: Execution, frame_id: int, kind: str, attempt: int
    ) -> Transition | None:
        if execution.status.is_final:
            return None
        step = self._step(execution)
        if kind == "execution_timeout":
            self._guarded(
                step,
                lambda: self._end(
                    step,
                    ExecutionStatus.TIMED_OUT,
                    error=StatesError.TIMEOUT.value,
                    cause="The execution timed out.",
                ),
            )
            return step.transition
        frame = execution.frames.get(frame_id)
        if frame is None:
            return None
        state = self._state(step, frame)
        if kind == "wait" and frame.status is FrameStatus.TIMER and isinstance(state, Wait):
            return self._settle(step, frame, state, lambda: wait_state.resume(step, frame, state))
        if kind == "retry" and frame.status is FrameStatus.TIMER and isinstance(state, _RETRYABLE):
            step.wake(frame)
            return self._run(step)
        if kind in ("task_timeout", "heartbeat") and frame.status is FrameStatus.TASK:
            if frame.attempt != attempt or not isinstance(state, Task):
                return None
            error = (
                StatesError.TIMEOUT.value
                if kind == "task_timeout"
                else StatesError.HEARTBEAT_TIMEOUT.value
            )
            cause = "" if kind == "task_timeout" else "The task did not send a heartbeat in time."
            return self._settle(
                step,
                frame,
                state,
                lambda: task_state.failed(step, frame, state, error, cause, timed_out=True),
            )
        return None

    def stop(self, execution: Execution, *, error: str | None, cause: str | None) -> Transition:
        step = self._step(execution)
        self._guarded(
            step, lambda: self._end(step, ExecutionStatus.ABORTED, error=error, cause=cause)
        )
        return step.transition

    def redrive(self, execution: Execution) -> Transition:
        """Run a failed, timed-out or aborted execution again from where it stopped: the failed
        and unfinished states run again; what had succeeded is kept."""
        step = self._step(execution)
        execution.redrive_count += 1
        execution.status = ExecutionStatus.RUNNING
        execution.stopped_at = None
        execution.error = execution.cause = None
        step.emit(
            "ExecutionRedriven",
            details("ExecutionRedriven", redriveCount=execution.redrive_count),
        )
        root = next(f for f in execution.frames.values() if f.parent is None)
        self._revive(step, root)
        return self._run(step)

    # --- the loop --------------------------------------------------------------------------

    def _step(self, execution: Execution) -> Step:
        return Step(execution, Transition(execution), self._clock(), self._entropy)

    def _state(self, step: Step, frame: Frame) -> State:
        return step.program(frame.program).states[frame.state]

    def _waiting_task(
        self, execution: Execution, frame_id: int, attempt: int
    ) -> tuple[Step, Frame, Task] | None:
        """The step, frame and Task state of a task waiting for this attempt's result; None for
        a late result of an attempt that timed out or was cancelled, or of an ended execution."""
        frame = execution.frames.get(frame_id)
        if execution.status.is_final or frame is None:
            return None
        if frame.status is not FrameStatus.TASK or frame.attempt != attempt:
            return None
        step = self._step(execution)
        state = self._state(step, frame)
        assert isinstance(state, Task)
        return step, frame, state

    def _settle(
        self, step: Step, frame: Frame, state: State, action: Callable[[], Outcome]
    ) -> Transition:
        def body() -> None:
            outcome = self._outcome(step, frame, state, action)
            self._apply(step, frame, state, outcome)
            if frame.status is FrameStatus.RUNNING:
                step.runnable.append(frame.id)
            self._loop(step)

        self._guarded(step, body)
        return step.transition

    def _run(self, step: Step) -> Transition:
        self._guarded(step, lambda: self._loop(step))
        return step.transition

    def _guarded(self, step: Step, body: Callable[[], None]) -> None:
        try:
            body()
        except HistoryLimitReachedError:
            self._end(
                step, ExecutionStatus.FAILED, error=StatesError.RUNTIME.value, cause=_HISTORY_FULL
            )

    def _loop(self, step: Step) -> None:
        execution = step.execution
        while step.runnable and not execution.status.is_final:
            frame = execution.frames[step.runnable.popleft()]
            while frame.status is FrameStatus.RUNNING and not execution.status.is_final:
                state = self._state(step, frame)
                if frame.entered_at is None:
                    frame.entered_at = step.now
                    frame.retries = [0] * len(getattr(state, "retry", ()))
                    event_type, fields = state_entered(state.type, state.name, frame.input)
                    frame.entered_event = step.emit(event_type, fields)
                    frame.touch()
                outcome = self._outcome(
                    step, frame, state, functools.partial(self._enter, step, frame, state)
                )
                self._apply(step, frame, state, outcome)

    def _enter(self, step: Step, frame: Frame, state: State) -> Outcome:
        if isinstance(state, Task):
            return task_state.enter(step, frame, state, self._inline)
        enter: Callable[[Step, Frame, State], Outcome] = _ENTER[state.type]  # type: ignore[assignment]
        return enter(step, frame, state)

    def _outcome(
        self, step: Step, frame: Frame, state: State, action: Callable[[], Outcome]
    ) -> Outcome:
        try:
            return action()
        except AslFailure as failure:
            cause = failure.cause
            if failure.error == StatesError.RUNTIME:
                cause = (
                    f"An error occurred while executing the state '{state.name}' (entered at the "
                    f"event id #{frame.entered_event}). {cause}"
                )
            return Failed(failure.error, cause)

    def _apply(self, step: Step, frame: Frame, state: State, outcome: Outcome) -> None:
        if isinstance(outcome, Suspended):
            return
        if isinstance(outcome, Failed):
            self._state_failed(step, frame, state, outcome.error, outcome.cause)
            return
        output = outcome.output
        event_type, fields = state_exited(state.type, state.name, output)
        if len(fields["stateExitedEventDetails"]["output"].encode()) > MAX_PAYLOAD_BYTES:
            self._state_failed(
                step,
                frame,
                state,
                StatesError.DATA_LIMIT_EXCEEDED.value,
                f"The state/task '{state.name}' returned a result with a size exceeding the "
                "maximum number of bytes service limit.",
            )
            return
        step.emit(event_type, fields)
        if isinstance(outcome, Next):
            frame.state = outcome.state
            frame.input = output
            frame.entered_at = None
            frame.retries = []
            frame.status = FrameStatus.RUNNING
            frame.touch()
            return
        assert isinstance(outcome, Ended)
        frame.status = FrameStatus.SUCCEEDED
        frame.output = output
        frame.touch()
        self._frame_succeeded(step, frame)

    # --- failures --------------------------------------------------------------------------

    def _state_failed(self, step: Step, frame: Frame, state: State, error: str, cause: str) -> None:
        if isinstance(state, _RETRYABLE):
            decision = handle_failure(
                error, cause, state.retry, state.catch, frame.retries, self._entropy.rng
            )
            if isinstance(decision, RetryAfter):
                while len(frame.retries) <= decision.retrier:
                    frame.retries.append(0)
                frame.retries[decision.retrier] += 1
                frame.touch()
                if decision.seconds <= 0:
                    frame.status = FrameStatus.RUNNING
                    return
                frame.status = FrameStatus.TIMER
                step.set_timer(frame, "retry", step.now + timedelta(seconds=decision.seconds))
                return
            if isinstance(decision, CatchTo):
                new_input = apply_result_path(
                    decision.result_path, frame.input, decision.error_output
                )
                if decision.result_path is not None:
                    step.record_write(frame, decision.result_path.text, decision.error_output)
                event_type, fields = state_exited(state.type, state.name, new_input)
                step.emit(event_type, fields)
                frame.state = decision.next_state
                frame.input = new_input
                frame.entered_at = None
                frame.retries = []
                frame.status = FrameStatus.RUNNING
                frame.touch()
                return
        self._frame_failed(step, frame, error, cause)

    def _frame_failed(self, step: Step, frame: Frame, error: str, cause: str) -> None:
        frame.status = FrameStatus.FAILED
        frame.error, frame.cause = error, cause
        frame.touch()
        if frame.parent is None:
            self._end(step, ExecutionStatus.FAILED, error=error, cause=cause)
            return
        parent = step.execution.frames[frame.parent]
        state = self._state(step, parent)
        assert frame.index is not None
        if isinstance(state, Parallel):
            self._cancel_children(step, parent, keep=frame.index)
            outcome = parallel_state.child_failed(step, parent, state, error, cause)
        else:
            assert isinstance(state, Map)
            running = dict(parent.children.running) if parent.children else {}
            running.pop(frame.index, None)
            outcome, cancel = map_state.child_failed(step, parent, state, frame.index, error, cause)
            if cancel:
                for index, child_id in running.items():
                    step.emit(
                        "MapIterationAborted",
                        details("MapIterationAborted", name=state.name, index=index),
                    )
                    self._cancel(step, step.execution.frames[child_id])
        self._apply(step, parent, state, outcome)
        if parent.status is FrameStatus.RUNNING:
            step.runnable.append(parent.id)

    def _frame_succeeded(self, step: Step, frame: Frame) -> None:
        if frame.parent is None:
            self._end(step, ExecutionStatus.SUCCEEDED, output=frame.output)
            return
        parent = step.execution.frames[frame.parent]
        state = self._state(step, parent)
        assert frame.index is not None
        if isinstance(state, Parallel):
            action: Callable[[], Outcome] = lambda: parallel_state.child_succeeded(  # noqa: E731
                step, parent, state, frame.index or 0, frame.output
            )
        else:
            assert isinstance(state, Map)
            action = lambda: map_state.child_succeeded(  # noqa: E731
                step, parent, state, frame.index or 0, frame.output
            )
        outcome = self._outcome(step, parent, state, action)
        self._apply(step, parent, state, outcome)
        if parent.status is FrameStatus.RUNNING:
            step.runnable.append(parent.id)

    # --- ending and cancelling -------------------------------------------------------------

    def _end(
        self,
        step: Step,
        status: ExecutionStatus,
        *,
        output: Any = None,
        error: str | None = None,
        cause: str | None = None,
    ) -> None:
        execution = step.execution
        if execution.status.is_final:
            return
        for frame in list(execution.frames.values()):
            if not frame.status.is_final:
                self._cancel(step, frame)
        execution.status = status
        execution.stopped_at = step.now
        execution.output, execution.error, execution.cause = output, error, cause
        root = next((f for f in execution.frames.values() if f.parent is None), None)
        if root is not None:
            step.cancel_timer(root, "execution_timeout")
        if status is ExecutionStatus.SUCCEEDED:
            step.emit(
                "ExecutionSucceeded",
                details(
                    "ExecutionSucceeded", output=to_text(output), outputDetails={"truncated": False}
                ),
            )
        else:
            event = {
                ExecutionStatus.FAILED: "ExecutionFailed",
                ExecutionStatus.TIMED_OUT: "ExecutionTimedOut",
                ExecutionStatus.ABORTED: "ExecutionAborted",
            }[status]
            fields = {k: v for k, v in (("error", error), ("cause", cause)) if v is not None}
            step.emit(event, details(event, **fields) if fields else {})
        step.transition.finished = True
        step.runnable.clear()

    def _cancel_children(self, step: Step, frame: Frame, *, keep: int | None = None) -> None:
        if frame.children is None:
            return
        for index, child_id in list(frame.children.running.items()):
            if index != keep:
                self._cancel(step, step.execution.frames[child_id])

    def _cancel(self, step: Step, frame: Frame) -> None:
        """Cancel a frame and everything it started; its task's late result will be ignored."""
        if frame.status.is_final:
            return
        self._cancel_children(step, frame)
        task = frame.task
        if task is not None and task.token:
            step.transition.revoked_tokens.append(task.token)
        if task is not None:
            step.transition.settled_tasks.append((frame.id, frame.attempt))
        if task is not None and task.kind == "child":
            step.transition.stopped_children.append((frame.id, frame.attempt))
        for kind in ("task_timeout", "heartbeat", "wait", "retry"):
            step.cancel_timer(frame, kind)
        frame.status = FrameStatus.CANCELLED
        frame.touch()

    def _revive(self, step: Step, frame: Frame) -> None:
        """Redrive: run a failed or cancelled frame again from its state, keeping finished work."""
        if frame.status is FrameStatus.SUCCEEDED:
            return
        children = [f for f in step.execution.frames.values() if f.parent == frame.id]
        unfinished = [
            c for c in children if c.status in (FrameStatus.FAILED, FrameStatus.CANCELLED)
        ]
        state = self._state(step, frame)
        if unfinished and isinstance(state, Parallel | Map) and frame.children is None:
            frame.children = _rebuild_children(step, frame, state, children)
        if frame.children is not None and unfinished:
            frame.status = FrameStatus.CHILDREN
            frame.touch()
            for child in unfinished:
                assert child.index is not None
                frame.children.running[child.index] = child.id
                self._revive(step, child)
            return
        frame.status = FrameStatus.RUNNING
        frame.retries = [0] * len(getattr(state, "retry", ()))
        frame.task = None
        frame.touch()
        step.runnable.append(frame.id)


def _rebuild_children(
    step: Step, frame: Frame, state: Parallel | Map, children: list[Frame]
) -> Any:
    from switchyard.engine.interpreter.model import Children

    total = len(state.branches) if isinstance(state, Parallel) else len({c.index for c in children})
    rebuilt = Children(total=total)
    for child in children:
        if child.status is FrameStatus.SUCCEEDED and child.index is not None:
            rebuilt.results[child.index] = child.output
    rebuilt.next_index = total
    return rebuilt
