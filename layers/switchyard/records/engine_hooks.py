"""Run records (`workflow_runs`, `task_runs`) kept from what the engine sees, in the same
transaction as the transition: what `switchyard runs`, `run --json` and the dashboard read. The
engine calls these hooks (`switchyard.engine.hooks`); `switchyard.local.stack` wires them in.

The records themselves are written by `switchyard.records.RunRecords`, which the recorder on AWS
feeds from Step Functions' history: this module only reads the engine's transitions and task
results as the facts that projection takes.
"""

from __future__ import annotations

from typing import cast

from switchyard.engine.hooks import (
    EndedInput,
    NoHooks,
    RedriveInput,
    TaskResultInput,
    TransitionInput,
)
from switchyard.engine.interpreter import Execution, TaskRequest
from switchyard.records import (
    ExecutionEnd,
    RunEnd,
    RunRecords,
    RunRef,
    RunStart,
    TaskCall,
    TaskKind,
    workflow_of,
)


def _ref(execution: Execution) -> RunRef:
    return RunRef(execution.id, execution.arn, child=execution.parent is not None)


def _call(request: TaskRequest) -> TaskCall:
    parameters = request.parameters if isinstance(request.parameters, dict) else {}
    function = str(parameters.get("FunctionName", "")).rsplit(":", 1)[-1]
    return TaskCall(cast(TaskKind, request.kind), function, request.parameters, request.token)


class RunRecordHooks(NoHooks):
    """The run records of executions of switchyard workflows (their machine's comment names the
    workflow); other executions have none."""

    def on_transition(self, input: TransitionInput) -> None:
        transition = input.transition
        execution = transition.execution
        workflow = workflow_of(execution.machine.comment)
        if workflow is None:
            return
        records = RunRecords(input.conn)
        run = _ref(execution)
        if input.started:
            parent = execution.parent
            start = RunStart(
                run_id=execution.name,
                workflow=workflow[0],
                version=workflow[1],
                input=execution.input,
                started_at=execution.started_at,
                parent_id=parent.execution_id if parent else None,
                parent_step=parent.step if parent else None,
            )
            records.started(run, start)
        for request in transition.tasks:
            records.scheduled(run, _call(request))
        for _, path, value in transition.writes:
            records.written(run, path, value)
        if transition.finished:
            end = RunEnd(
                status=cast(ExecutionEnd, execution.status.value),
                output=execution.output,
                error=execution.error,
                cause=execution.cause,
                stopped_at=execution.stopped_at,
            )
            records.finished(run, end)
        if transition.revoked_tokens:  # after finished: a run that ended closes its gates
            timed_out = any(event.type == "TaskTimedOut" for event in transition.events)
            records.revoked(transition.revoked_tokens, timed_out=timed_out)

    def on_redrive(self, input: RedriveInput) -> None:
        if workflow_of(input.execution.machine.comment) is not None:
            RunRecords(input.conn).redriven(_ref(input.execution))

    def on_task_result(self, input: TaskResultInput) -> None:
        """`RunRecords.task_result` for a task of this execution's."""
        if workflow_of(input.execution.machine.comment) is None:
            return
        RunRecords(input.conn).task_result(
            _ref(input.execution),
            _call(input.request),
            input.ok,
            input.value,
            cause=input.cause,
            error=input.error,
            answered=input.answered,
            late=input.late,
        )

    def on_ended_answered(self, input: EndedInput) -> None:
        """A task of an ended run answered: a gate its notification opened while the run was
        ending is closed as the others were."""
        execution = input.execution
        if execution.status.is_final and workflow_of(execution.machine.comment) is not None:
            status = cast(ExecutionEnd, execution.status.value)
            RunRecords(input.conn).late_result(_ref(execution), status)
