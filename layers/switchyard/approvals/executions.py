"""Runs on AWS as the operators' routes find them (`switchyard.local.run_actions.RunDirectory`).

A run is named by its execution ARN, or by its id (the execution name) while it waits at a gate:
the gates approval_notify recorded hold the ARN (the run id alone does not say which workflow's
machine ran it, and the database has no other record of runs on AWS). Its status is Step
Functions' own (`DescribeExecution`): a cancel of a run that has ended is refused, as locally,
since `StopExecution` of an ended execution succeeds and changes nothing.

The role may describe and stop executions of the stack's machines only; an ARN of any other
machine (denied), of none, or malformed is "no such run".
"""

from __future__ import annotations

import re
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.gates.store import GateStore
from switchyard.local.report import AmbiguousRunError, RunNotFoundError
from switchyard.local.run_actions import RunRef

EXECUTION_ARN = re.compile(
    r"^arn:aws[a-z-]*:states:[a-z0-9-]+:[0-9]{12}:execution:(?P<machine>[^\s:/]{1,80})"
    r":(?P<name>[^\s:/]{1,80})$"
)
STATUSES = {
    "RUNNING": "running",
    "PENDING_REDRIVE": "running",
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "TIMED_OUT": "timed_out",
    "ABORTED": "cancelled",
}
"""Step Functions' execution status as a run's status (`switchyard.local.report.RUN_STATUSES`)."""
NOT_FOUND = frozenset(
    {"ExecutionDoesNotExist", "StateMachineDoesNotExist", "InvalidArn", "AccessDeniedException"}
)
"""Step Functions' answers that mean "no such run for this role"."""


class StepFunctionsRuns:
    """Runs of the deployed machines: the gates table for ids, Step Functions for status."""

    def __init__(self, pool: ConnectionPool, client: Any) -> None:
        self._gates = GateStore(pool)
        self._client = client

    def locate(self, run: str) -> RunRef:
        if run.startswith("arn:"):
            arn, workflow = run, self._workflow(run)
        else:
            arn, workflow = self._waiting(run)
        matched = EXECUTION_ARN.match(arn)
        if matched is None:
            raise RunNotFoundError(
                f"{run!r} is not an execution ARN"
                " (arn:aws:states:<region>:<account>:execution:<machine>:<run id>)"
            )
        status = self._describe(arn)
        if status is None:
            raise RunNotFoundError(f"no run {run!r} in this stack's workflows")
        return RunRef(None, arn, matched["name"], workflow or matched["machine"], status)

    def status(self, run: RunRef) -> str | None:
        return self._describe(run.execution_arn)

    def _waiting(self, run_id: str) -> tuple[str, str | None]:
        rows = self._gates.waiting_runs(run_id)
        if not rows:
            raise RunNotFoundError(
                f"no run {run_id!r} waits at a gate; name a run that does not by its execution"
                f" ARN (arn:aws:states:<region>:<account>:execution:<machine>:{run_id})"
            )
        arns = sorted({row.execution_arn for row in rows})
        if len(arns) > 1:
            raise AmbiguousRunError(
                f"{run_id!r} names several runs ({', '.join(arns)}); give the ARN"
            )
        return rows[0].execution_arn, rows[0].workflow

    def _workflow(self, arn: str) -> str | None:
        return self._gates.workflow_of(arn)

    def _describe(self, arn: str) -> str | None:
        """The run's status; None when Step Functions has no such execution for this role."""
        try:
            described = self._client.describe_execution(executionArn=arn)
        except Exception as exc:
            code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
            if code in NOT_FOUND:
                return None
            raise
        return STATUSES.get(str(described["status"]), "running")
