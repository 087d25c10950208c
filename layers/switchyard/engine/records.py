"""Run records (`workflow_runs`, `task_runs`) kept from what the engine sees, in the same
transaction as the transition: what `switchyard runs`, `run --json` and the dashboard read.

The records themselves are written by `switchyard.records.RunRecords`, which the recorder on AWS
feeds from Step Functions' history: this module only reads the engine's transitions and task
results as the facts that projection takes.
"""

from __future__ import annotations

from typing import Any, cast

import psycopg

from switchyard.engine.interpreter import Execution, ExecutionStatus, TaskRequest, Transition
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

_ENDED_BY = {
    ExecutionStatus.TIMED_OUT: "timed out",
    ExecutionStatus.FAILED: "failed",
    ExecutionStatus.ABORTED: "was stopped",
    ExecutionStatus.SUCCEEDED: "ended",
}


def stopped_by_parent(parent: Execution) -> str:
    """The cause a child run is stopped with when its parent ends first (as Step Functions stops
    a `.sync` child): what its record shows."""
    return _stopped_by(parent.name, parent.status)


def _stopped_by(name: str, status: ExecutionStatus) -> str:
    how = _ENDED_BY.get(status, "ended")
    return f"The parent execution {name} {how}, so this sub-workflow run was stopped"


ORPHANS_SQL = """
SELECT c.arn, p.name, p.status FROM sfn_executions c
JOIN sfn_executions p ON p.id = (c.parent->>'execution_id')::bigint
WHERE c.status = 'RUNNING' AND p.status <> 'RUNNING' AND NOT c.options ? 'recorded_from'
"""


def orphaned_children(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """Running children whose parent has ended (an engine stopped before it stopped them):
    child execution ARN -> the cause to stop it with. Recovery stops them. (Executions the
    recorder mirrors from AWS are not the engine's to stop.)"""
    return {
        str(arn): _stopped_by(str(name), ExecutionStatus(status))
        for arn, name, status in conn.execute(ORPHANS_SQL).fetchall()
    }


def _ref(execution: Execution) -> RunRef:
    return RunRef(execution.id, execution.arn, child=bool(execution.parent))


def _call(request: TaskRequest) -> TaskCall:
    parameters = request.parameters if isinstance(request.parameters, dict) else {}
    function = str(parameters.get("FunctionName", "")).rsplit(":", 1)[-1]
    return TaskCall(cast(TaskKind, request.kind), function, request.parameters, request.token)


class RunRecorder:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._records = RunRecords(conn)

    def transition(
        self,
        transition: Transition,
        *,
        started: bool,
        parent_id: int | None,
        parent_step: str | None = None,
    ) -> None:
        execution = transition.execution
        workflow = workflow_of(execution.machine.comment)
        if workflow is None:
            return
        run = _ref(execution)
        if started:
            start = RunStart(
                run_id=execution.name,
                workflow=workflow[0],
                version=workflow[1],
                input=execution.input,
                started_at=execution.started_at,
                parent_id=parent_id,
                parent_step=parent_step,
            )
            self._records.started(run, start)
        for request in transition.tasks:
            self._records.scheduled(run, _call(request))
        for _, path, value in transition.writes:
            self._records.written(run, path, value)
        if transition.finished:
            end = RunEnd(
                status=cast(ExecutionEnd, execution.status.value),
                output=execution.output,
                error=execution.error,
                cause=execution.cause,
                stopped_at=execution.stopped_at,
            )
            self._records.finished(run, end)
        if transition.revoked_tokens:  # after finished: a run that ended closes its gates
            timed_out = any(event.type == "TaskTimedOut" for event in transition.events)
            self._records.revoked(transition.revoked_tokens, timed_out=timed_out)

    def redriven(self, execution: Execution) -> None:
        if workflow_of(execution.machine.comment) is not None:
            self._records.redriven(_ref(execution))

    def task_result(
        self,
        execution: Execution,
        request: TaskRequest,
        ok: bool,
        value: Any,
        *,
        cause: str | None = None,
        error: str | None = None,
        answered: bool = False,
        late: bool = False,
    ) -> None:
        """`RunRecords.task_result` for a task of this execution's."""
        if workflow_of(execution.machine.comment) is None:
            return
        self._records.task_result(
            _ref(execution),
            _call(request),
            ok,
            value,
            cause=cause,
            error=error,
            answered=answered,
            late=late,
        )

    def late_result(self, execution: Execution) -> None:
        """A task of an ended run answered: a gate its notification opened while the run was
        ending is closed as the others were."""
        if execution.status.is_final and workflow_of(execution.machine.comment) is not None:
            self._records.late_result(_ref(execution), cast(ExecutionEnd, execution.status.value))
