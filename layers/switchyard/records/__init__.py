"""Run records: `workflow_runs` and `task_runs`, written from an execution's facts by one
projection (`RunRecords`), which the local engine feeds from its transitions and the recorder
on AWS from Step Functions' execution history (docs/dashboard.md, "Run records on AWS")."""

from switchyard.records.projection import (
    STEP_FUNCTIONS,
    ExecutionEnd,
    RunEnd,
    RunRecords,
    RunRef,
    RunStart,
    TaskCall,
    TaskKind,
    workflow_of,
)

__all__ = [
    "STEP_FUNCTIONS",
    "ExecutionEnd",
    "RunEnd",
    "RunRecords",
    "RunRef",
    "RunStart",
    "TaskCall",
    "TaskKind",
    "workflow_of",
]
