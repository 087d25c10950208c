"""Run records (`workflow_runs`, `task_runs`) kept from what the engine sees, in the same
transaction as the transition: what `switchyard runs`, `run --json` and the dashboard read.

Only machines compiled by switchyard (their Comment says "switchyard workflow NAME version N")
get run records; other state machines are plain Step Functions executions.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import psycopg

from switchyard.contract import error_type_of
from switchyard.contract.errors import read_cause, read_spend
from switchyard.engine.gate_records import record_answer, record_revoked
from switchyard.engine.interpreter import Execution, ExecutionStatus, TaskRequest, Transition
from switchyard.engine.store.codec import json_text

_COMMENT = re.compile(r"^switchyard workflow (\S+) version (\d+)")
_STEP_RECORD = re.compile(r"^\$\.steps\.([A-Za-z0-9_]+)$")
_STEP_FUNCTIONS = ("agent_step", "tool_step", "router_step")
_RUN_STATUS = {
    ExecutionStatus.SUCCEEDED: "succeeded",
    ExecutionStatus.FAILED: "failed",
    ExecutionStatus.ABORTED: "cancelled",
    ExecutionStatus.TIMED_OUT: "timed_out",
}
_FAILED_ACTIONS = ("fail", "continue", "pause", "fallback")
"""A shared tail's actions after a step failed for good (not a gate's budget or human)."""
_GATE_STATUS = {"approval": "waiting", "human": "waiting", "pause": "paused", "budget": "paused"}


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
WHERE c.status = 'RUNNING' AND p.status <> 'RUNNING'
"""


def orphaned_children(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """Running children whose parent has ended (an engine stopped before it stopped them):
    child execution ARN -> the cause to stop it with. Recovery stops them."""
    return {
        str(arn): _stopped_by(str(name), ExecutionStatus(status))
        for arn, name, status in conn.execute(ORPHANS_SQL).fetchall()
    }


def _json(value: Any) -> str | None:
    return None if value is None else json_text(value)


def workflow_of(execution: Execution) -> tuple[str, int] | None:
    match = _COMMENT.match(execution.machine.comment or "")
    return (match.group(1), int(match.group(2))) if match else None


def _payload(request: TaskRequest) -> dict[str, Any] | None:
    parameters = request.parameters
    if isinstance(parameters, dict) and isinstance(parameters.get("Payload"), dict):
        return parameters["Payload"]  # type: ignore[no-any-return]
    return None


def _function(request: TaskRequest) -> str:
    parameters = request.parameters if isinstance(request.parameters, dict) else {}
    name = str(parameters.get("FunctionName", ""))
    return name.rsplit(":", 1)[-1]


def _item(payload: dict[str, Any]) -> str:
    scope = (payload.get("context") or {}).get("scope") or {}
    if "index" in scope:
        return f"[{scope['index']}]"
    if "iteration" in scope:
        return f"#{scope['iteration']}"
    return ""


class RunRecorder:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def transition(
        self,
        transition: Transition,
        *,
        started: bool,
        parent_id: int | None,
        parent_step: str | None = None,
    ) -> None:
        execution = transition.execution
        workflow = workflow_of(execution)
        if workflow is None:
            return
        if started:
            self._conn.execute(
                "INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version,"
                " status, input, started_at, parent_execution_id, parent_step)"
                " VALUES (%s, %s, %s, %s, 'running', %s::jsonb, %s, %s, %s)"
                " ON CONFLICT (execution_id) DO NOTHING",
                (execution.id, execution.name, workflow[0], workflow[1], _json(execution.input),
                 execution.started_at, parent_id, parent_step),
            )  # fmt: skip
        for request in transition.tasks:
            self._scheduled(execution, request)
        for _, path, value in transition.writes:
            match = _STEP_RECORD.match(path)
            if match and isinstance(value, dict) and value.get("status") not in (None, "running"):
                self._record(execution, match.group(1), value)
            elif path == "$":
                self._tail_record(execution, value)
        if transition.finished:
            self._finished(execution)
        if transition.revoked_tokens:  # after _finished: a run that ended closes its gates
            timed_out = any(event.type == "TaskTimedOut" for event in transition.events)
            record_revoked(self._conn, transition.revoked_tokens, timed_out=timed_out)

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
        """A step function returned: count its cost and tokens, or those a failed attempt
        reported in its error's `cause`; a gate closed: run again (`answered`: through its task
        token, which the gate row records). `late`: its frame had been cancelled (the run failed
        or moved on while it ran): only its spend is counted, so that the run's cost is what the
        budget ledger settled."""
        if workflow_of(execution) is None:
            return
        payload = _payload(request)
        if payload is None:
            return
        if request.kind == "callback":
            self._conn.execute(
                "UPDATE workflow_runs SET status = 'running', updated_at = now(), version ="
                " version + 1"
                " WHERE execution_id = %s AND status IN ('waiting', 'paused')",
                (execution.id,),
            )
            if answered and request.token:
                record_answer(
                    self._conn, request.token, ok=ok, output=value, error=error, cause=cause
                )
            return
        if _function(request) not in _STEP_FUNCTIONS:
            return
        if ok:
            result = (
                value.get("Payload") if isinstance(value, dict) and "Payload" in value else value
            )
        else:
            result = read_spend(cause)
        if not isinstance(result, dict):
            return
        usage = result.get("usage") or {}
        cost = Decimal(str(result.get("cost_usd") or 0))
        tokens_in = int(usage.get("input_tokens") or 0)
        tokens_out = int(usage.get("output_tokens") or 0)
        cached = int(usage.get("cache_read_tokens") or 0)
        step_id = str(payload.get("step_id"))
        item = _item(payload)
        self._conn.execute(
            "INSERT INTO task_runs (execution_id, step_id, item, status, attempts, cost_usd,"
            " input_tokens,"
            " output_tokens, cache_read_tokens, model, provider, started_at)"
            " VALUES (%s, %s, %s, 'running', %s, %s, %s, %s, %s, %s, %s, now())"
            " ON CONFLICT (execution_id, step_id, item) DO UPDATE SET"
            " attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts),"
            " cost_usd = task_runs.cost_usd + EXCLUDED.cost_usd,"
            " input_tokens = task_runs.input_tokens + EXCLUDED.input_tokens,"
            " output_tokens = task_runs.output_tokens + EXCLUDED.output_tokens,"
            " cache_read_tokens = task_runs.cache_read_tokens + EXCLUDED.cache_read_tokens,"
            " model = COALESCE(EXCLUDED.model, task_runs.model),"
            " provider = COALESCE(EXCLUDED.provider, task_runs.provider),"
            " updated_at = now(), version = task_runs.version + 1",
            (execution.id, step_id, item, int(result.get("attempts") or 1), cost, tokens_in,
             tokens_out, cached, usage.get("model"), usage.get("provider")),
        )  # fmt: skip
        if item and ok and not late:  # a map item or loop iteration: the step record comes later
            self._conn.execute(
                "UPDATE task_runs SET status = 'completed', output = %s::jsonb, ended_at = now()"
                " WHERE execution_id = %s AND step_id = %s AND item = %s",
                (_json(result.get("output")), execution.id, step_id, item),
            )
        self._conn.execute(
            "UPDATE workflow_runs SET cost_usd = cost_usd + %s, input_tokens = input_tokens + %s,"
            " output_tokens = output_tokens + %s, updated_at = now(), version = version + 1"
            " WHERE execution_id = %s",
            (cost, tokens_in, tokens_out, execution.id),
        )
        if execution.parent:
            self._count_for_ancestors(execution, cost, tokens_in, tokens_out)

    def _count_for_ancestors(
        self, execution: Execution, cost: Decimal, tokens_in: int, tokens_out: int
    ) -> None:
        """A sub-workflow's spend also counts toward every ancestor run's totals and toward the
        record of the step that started it there."""
        self._conn.execute(
            "WITH RECURSIVE up(execution_id, step_id) AS ("
            "  SELECT parent_execution_id, parent_step FROM workflow_runs"
            "   WHERE execution_id = %(id)s AND parent_execution_id IS NOT NULL"
            "  UNION ALL"
            "  SELECT w.parent_execution_id, w.parent_step FROM workflow_runs w"
            "   JOIN up ON w.execution_id = up.execution_id"
            "   WHERE w.parent_execution_id IS NOT NULL"
            "), runs AS ("
            "  UPDATE workflow_runs r SET cost_usd = r.cost_usd + %(cost)s,"
            "   input_tokens = r.input_tokens + %(in)s, output_tokens = r.output_tokens + %(out)s,"
            "   updated_at = now(), version = r.version + 1"
            "  FROM up WHERE r.execution_id = up.execution_id"
            "  RETURNING r.execution_id"
            ")"
            " INSERT INTO task_runs (execution_id, step_id, item, status, attempts, cost_usd,"
            "  input_tokens, output_tokens, started_at)"
            " SELECT up.execution_id, up.step_id, '', 'running', 1, %(cost)s, %(in)s, %(out)s,"
            "  now() FROM up JOIN runs ON runs.execution_id = up.execution_id"
            "  WHERE up.step_id IS NOT NULL"
            " ON CONFLICT (execution_id, step_id, item) DO UPDATE SET"
            "  cost_usd = task_runs.cost_usd + EXCLUDED.cost_usd,"
            "  input_tokens = task_runs.input_tokens + EXCLUDED.input_tokens,"
            "  output_tokens = task_runs.output_tokens + EXCLUDED.output_tokens,"
            "  updated_at = now(), version = task_runs.version + 1",
            {"id": execution.id, "cost": cost, "in": tokens_in, "out": tokens_out},
        )

    def _scheduled(self, execution: Execution, request: TaskRequest) -> None:
        payload = _payload(request)
        if payload is None or "step_id" not in payload:
            return
        step_id = str(payload["step_id"])
        if request.kind == "callback":
            kind = str(payload.get("kind", "approval"))
            run_status = _GATE_STATUS.get(kind, "waiting")
            self._conn.execute(
                "UPDATE workflow_runs SET status = %s, updated_at = now(), version = version + 1"
                " WHERE execution_id = %s",
                (run_status, execution.id),
            )
            step_status = "waiting"
            attempts = 0
        elif _function(request) in _STEP_FUNCTIONS:
            step_status = "running"
            retry = payload.get("retry_count") or 0
            attempts = int(retry) + int(payload.get("loop_retries") or 0) + 1
        else:
            return
        self._conn.execute(
            "INSERT INTO task_runs (execution_id, step_id, item, status, attempts, started_at,"
            " input)"
            " VALUES (%s, %s, %s, %s, %s, now(), %s::jsonb)"
            " ON CONFLICT (execution_id, step_id, item) DO UPDATE SET status = EXCLUDED.status,"
            " attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), updated_at = now(),"
            " version = task_runs.version + 1",
            (execution.id, step_id, _item(payload), step_status, attempts,
             _json((payload.get("context") or {}).get("inputs"))),
        )  # fmt: skip

    def _tail_record(self, execution: Execution, value: Any) -> None:
        """The failed record a block's shared tail wrote (its `on error` Task, the render
        function's `caught` helper, returns the whole state: `error.step` names the step)."""
        state = value.get("Payload") if isinstance(value, dict) else None
        error = state.get("error") if isinstance(state, dict) else None
        if not isinstance(error, dict) or error.get("action") not in _FAILED_ACTIONS:
            return
        assert isinstance(state, dict)
        record = (state.get("steps") or {}).get(error.get("step"))
        if isinstance(record, dict) and record.get("status") == "failed":
            self._record(execution, str(error["step"]), record)

    def _record(self, execution: Execution, step_id: str, record: dict[str, Any]) -> None:
        status = str(record.get("status"))
        error = record.get("error")
        if isinstance(error, dict) and "type" in error:
            error = {**error, "type": error_type_of(str(error["type"]))}
        self._conn.execute(
            "INSERT INTO task_runs (execution_id, step_id, item, status, output, error, attempts,"
            " ended_at)"
            " VALUES (%s, %s, '', %s, %s::jsonb, %s::jsonb, %s, now())"
            " ON CONFLICT (execution_id, step_id, item) DO UPDATE SET status = EXCLUDED.status,"
            " output = EXCLUDED.output, error = EXCLUDED.error,"
            " attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), ended_at = now(),"
            " updated_at = now(), version = task_runs.version + 1",
            (execution.id, step_id, status, _json(record.get("output")), _json(error),
             int(record.get("attempts") or 0)),
        )  # fmt: skip

    def _finished(self, execution: Execution) -> None:
        """The run's end; a failure names the step that failed last (read in the same statement,
        so that it sees this batch's step records without waiting for them)."""
        status = _RUN_STATUS.get(execution.status, "failed")
        error = None
        if execution.status is ExecutionStatus.ABORTED:
            error = {"type": "cancelled", "message": execution.cause or ""}
        elif execution.status is not ExecutionStatus.SUCCEEDED and execution.error is not None:
            message, _ = read_cause(execution.cause)  # the plain message, whatever wraps it
            error = {"type": error_type_of(execution.error), "message": message}
        self._conn.execute(
            "UPDATE workflow_runs SET status = %s, output = %s::jsonb, ended_at = %s,"
            " error = CASE WHEN %s::jsonb IS NULL THEN NULL ELSE %s::jsonb || jsonb_build_object("
            "'step', (SELECT step_id FROM task_runs WHERE execution_id = %s AND status = 'failed'"
            " ORDER BY updated_at DESC LIMIT 1)) END,"
            " updated_at = now(), version = version + 1 WHERE execution_id = %s",
            (status, _json(execution.output), execution.stopped_at, _json(error), _json(error),
             execution.id, execution.id),
        )  # fmt: skip
        if execution.status is not ExecutionStatus.SUCCEEDED:
            self._close_unfinished(execution, status)

    def late_result(self, execution: Execution) -> None:
        """A task of an ended run answered: a gate its notification opened while the run was
        ending (after `_close_unfinished` ran) is closed as the others were."""
        if execution.status is ExecutionStatus.SUCCEEDED or workflow_of(execution) is None:
            return
        status = _RUN_STATUS.get(execution.status, "failed")
        self._conn.execute(
            "UPDATE gates SET status = 'closed', decided_at = now(), note = %s"
            " WHERE execution_arn = %s AND status = 'open'",
            (f"the run {status.replace('_', ' ')}", execution.arn),
        )

    def _close_unfinished(self, execution: Execution, status: str) -> None:
        """A run that ended badly leaves no step running or waiting and no gate open: a branch
        still waiting for a person when another failed, or when the run was cancelled."""
        ended = {
            "type": "cancelled",
            "message": f"the run {status.replace('_', ' ')} before this step finished",
        }
        self._conn.execute(
            "UPDATE task_runs SET status = 'failed', error = %s::jsonb, ended_at = now(),"
            " updated_at = now(), version = version + 1"
            " WHERE execution_id = %s AND status IN ('running', 'waiting')",
            (_json(ended), execution.id),
        )
        self._conn.execute(
            "UPDATE gates SET status = 'closed', decided_at = now(), note = %s"
            " WHERE execution_arn = %s AND status = 'open'",
            (ended["message"].replace(" before this step finished", ""), execution.arn),
        )
