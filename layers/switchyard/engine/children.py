"""Child executions (`states:startExecution`) whose parent ended first: as Step Functions stops
a `.sync` child, the engine stops them, with a cause that says why."""

from __future__ import annotations

from switchyard.engine.interpreter import Execution, ExecutionStatus

_ENDED_BY = {
    ExecutionStatus.TIMED_OUT: "timed out",
    ExecutionStatus.FAILED: "failed",
    ExecutionStatus.ABORTED: "was stopped",
    ExecutionStatus.SUCCEEDED: "ended",
}


def stopped_by_parent(parent: Execution) -> str:
    """The cause a child run is stopped with when its parent ends first (what its record
    shows)."""
    return stopped_by(parent.name, parent.status)


def stopped_by(name: str, status: ExecutionStatus) -> str:
    how = _ENDED_BY.get(status, "ended")
    return f"The parent execution {name} {how}, so this sub-workflow run was stopped"
