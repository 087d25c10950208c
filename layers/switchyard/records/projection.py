"""The run records (`workflow_runs`, `task_runs`): the one module that writes them.

Two callers feed it the same facts about an execution, in the order they happened:
- the local engine (`switchyard.engine.records.RunRecorder`), from each transition, in the
  transaction that commits the transition;
- the recorder on AWS (`switchyard.records.history`), from the execution's history in Step
  Functions.

The facts: a run started; a Task was scheduled; a step function (or a gate's task token) returned;
a result was written into the state (`$.steps.<id>` records, the whole `$.steps`, a block's
shared tail writing `$`);
the run ended, or was redriven. Each method says what it writes. Times default to the
transaction's (`now()`, the engine commits as it goes); the AWS recorder passes each event's own
time, so that a run recorded after the fact keeps its timing.

Only machines compiled by switchyard (their Comment says "switchyard workflow NAME version N")
get run records; other state machines are plain Step Functions executions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

import psycopg

from switchyard.contract import continued_to, error_type_of
from switchyard.contract.errors import read_cause, read_spend
from switchyard.records.gate_records import record_answer, record_revoked
from switchyard.records.jsonb import json_text
from switchyard.records.segments import segment_of

_COMMENT = re.compile(r"^switchyard workflow (\S+) version (\d+)")
_STEP_RECORD = re.compile(r"^\$\.steps\.([A-Za-z0-9_]+)$")
STEP_FUNCTIONS = ("agent_step", "tool_step", "router_step")
"""The functions whose results carry a step's spend (`StepResult`)."""
_RUN_STATUS = {
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "ABORTED": "cancelled",
    "TIMED_OUT": "timed_out",
}
_FAILED_ACTIONS = ("fail", "continue", "pause", "fallback")
"""A shared tail's actions after a step failed for good (not a gate's budget or human)."""
_GATE_STATUS = {"approval": "waiting", "human": "waiting", "pause": "paused", "budget": "paused"}
_AFTER_FAILURE = ("pause",)
"""Gates a step's failure opens (`on_error: pause`), after its failed record is written."""

TaskKind = Literal["lambda", "callback", "child", "sqs", "unsupported"]
ExecutionEnd = Literal["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]


def workflow_of(comment: str | None) -> tuple[str, int] | None:
    """(workflow, version) of a machine switchyard compiled, read from its Comment; else None."""
    match = _COMMENT.match(comment or "")
    return (match.group(1), int(match.group(2))) if match else None


@dataclass(frozen=True)
class RunRef:
    """The execution a fact is about."""

    execution_id: int
    arn: str
    child: bool = False
    """Started by a parent run (`.sync`): its spend also counts toward every ancestor."""


@dataclass(frozen=True)
class RunStart:
    run_id: str
    """The execution's name."""
    workflow: str
    version: int
    input: Any
    started_at: datetime | None
    parent_id: int | None = None
    parent_step: str | None = None


@dataclass(frozen=True)
class RunEnd:
    status: ExecutionEnd
    output: Any = None
    error: str | None = None
    cause: str | None = None
    stopped_at: datetime | None = None


@dataclass(frozen=True)
class TaskCall:
    """A Task state's request, as the records read it."""

    kind: TaskKind
    function: str
    """The function's folder name (`agent_step`, ...) for a Lambda task, else ''."""
    parameters: Any
    token: str | None = None

    @property
    def payload(self) -> dict[str, Any] | None:
        parameters = self.parameters
        if isinstance(parameters, dict) and isinstance(parameters.get("Payload"), dict):
            return parameters["Payload"]  # type: ignore[no-any-return]
        return None


def _json(value: Any) -> str | None:
    return None if value is None else json_text(value)


def _item(payload: dict[str, Any]) -> str:
    scope = (payload.get("context") or {}).get("scope") or {}
    if "index" in scope:
        return f"[{scope['index']}]"
    if "iteration" in scope:
        return f"#{scope['iteration']}"
    return ""


START_SQL = """
INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version, status, input,
                           started_at, parent_execution_id, parent_step, logical_run_id,
                           segment, continued_from)
VALUES (%s, %s, %s, %s, 'running', %s::jsonb, %s, %s, %s, %s, %s, %s)
ON CONFLICT (execution_id) DO NOTHING
"""
RUN_STATUS_SQL = """
UPDATE workflow_runs SET status = %s, updated_at = now(), version = version + 1
 WHERE execution_id = %s
"""
RUN_RESUMED_SQL = """
UPDATE workflow_runs SET status = 'running', updated_at = now(), version = version + 1
 WHERE execution_id = %s AND status IN ('waiting', 'paused')
"""
REDRIVEN_SQL = """
UPDATE workflow_runs SET status = 'running', ended_at = NULL, error = NULL, updated_at = now(),
       version = version + 1
 WHERE execution_id = %s
"""
SCHEDULED_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, attempts, started_at, input)
VALUES (%(id)s, %(step)s, %(item)s, %(status)s, %(attempts)s, COALESCE(%(at)s, now()),
        %(input)s::jsonb)
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET
       status = CASE WHEN %(after_failure)s AND task_runs.status = 'failed' THEN 'failed'
                     ELSE EXCLUDED.status END,
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), updated_at = now(),
       version = task_runs.version + 1
"""
SPEND_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, attempts, cost_usd, input_tokens,
                       output_tokens, cache_read_tokens, model, provider, started_at)
VALUES (%s, %s, %s, 'running', %s, %s, %s, %s, %s, %s, %s, COALESCE(%s, now()))
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts),
       cost_usd = task_runs.cost_usd + EXCLUDED.cost_usd,
       input_tokens = task_runs.input_tokens + EXCLUDED.input_tokens,
       output_tokens = task_runs.output_tokens + EXCLUDED.output_tokens,
       cache_read_tokens = task_runs.cache_read_tokens + EXCLUDED.cache_read_tokens,
       model = COALESCE(EXCLUDED.model, task_runs.model),
       provider = COALESCE(EXCLUDED.provider, task_runs.provider),
       updated_at = now(), version = task_runs.version + 1
"""
ITEM_DONE_SQL = """
UPDATE task_runs SET status = 'completed', output = %s::jsonb, ended_at = COALESCE(%s, now())
 WHERE execution_id = %s AND step_id = %s AND item = %s
"""
RUN_SPEND_SQL = """
UPDATE workflow_runs SET cost_usd = cost_usd + %s, input_tokens = input_tokens + %s,
       output_tokens = output_tokens + %s, updated_at = now(), version = version + 1
 WHERE execution_id = %s
"""
ANCESTORS_SPEND_SQL = """
WITH RECURSIVE up(execution_id, step_id) AS (
    SELECT parent_execution_id, parent_step FROM workflow_runs
     WHERE execution_id = %(id)s AND parent_execution_id IS NOT NULL
    UNION ALL
    SELECT w.parent_execution_id, w.parent_step FROM workflow_runs w
      JOIN up ON w.execution_id = up.execution_id
     WHERE w.parent_execution_id IS NOT NULL
), runs AS (
    UPDATE workflow_runs r SET cost_usd = r.cost_usd + %(cost)s,
           input_tokens = r.input_tokens + %(in)s, output_tokens = r.output_tokens + %(out)s,
           updated_at = now(), version = r.version + 1
      FROM up WHERE r.execution_id = up.execution_id
    RETURNING r.execution_id
)
INSERT INTO task_runs (execution_id, step_id, item, status, attempts, cost_usd, input_tokens,
                       output_tokens, started_at)
SELECT up.execution_id, up.step_id, '', 'running', 1, %(cost)s, %(in)s, %(out)s,
       COALESCE(%(at)s, now())
  FROM up JOIN runs ON runs.execution_id = up.execution_id
 WHERE up.step_id IS NOT NULL
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET
       cost_usd = task_runs.cost_usd + EXCLUDED.cost_usd,
       input_tokens = task_runs.input_tokens + EXCLUDED.input_tokens,
       output_tokens = task_runs.output_tokens + EXCLUDED.output_tokens,
       attempts = GREATEST(task_runs.attempts, 1),
       started_at = COALESCE(task_runs.started_at, EXCLUDED.started_at),
       updated_at = now(), version = task_runs.version + 1
"""
RECORD_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, output, error, attempts, ended_at)
VALUES (%s, %s, '', %s, %s::jsonb, %s::jsonb, %s, COALESCE(%s, now()))
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET status = EXCLUDED.status,
       output = EXCLUDED.output, error = EXCLUDED.error,
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), ended_at = EXCLUDED.ended_at,
       updated_at = now(), version = task_runs.version + 1
"""
FINISHED_SQL = """
UPDATE workflow_runs SET status = %(status)s, output = %(output)s::jsonb, ended_at = %(ended)s,
       error = CASE WHEN %(error)s::jsonb IS NULL THEN NULL ELSE %(error)s::jsonb
           || jsonb_build_object('step', (SELECT step_id FROM task_runs
                                           WHERE execution_id = %(id)s AND status = 'failed'
                                           ORDER BY ended_at DESC NULLS LAST, updated_at DESC
                                           LIMIT 1)) END,
       updated_at = now(), version = version + 1
 WHERE execution_id = %(id)s
"""
CONTINUED_STEPS_SQL = """
UPDATE task_runs SET status = 'continued', ended_at = COALESCE(%s, now()),
       updated_at = now(), version = version + 1
 WHERE execution_id = %s AND status IN ('running', 'waiting')
"""
UNFINISHED_STEPS_SQL = """
UPDATE task_runs SET status = 'failed', error = %s::jsonb, ended_at = COALESCE(%s, now()),
       updated_at = now(), version = version + 1
 WHERE execution_id = %s AND status IN ('running', 'waiting')
"""
RECORDS_SQL = """
INSERT INTO task_runs (execution_id, step_id, item, status, output, error, attempts, ended_at)
SELECT %(id)s, r.step_id, '', r.status, r.output, r.error, COALESCE(r.attempts, 0),
       COALESCE(%(at)s, now())
  FROM jsonb_to_recordset(%(records)s::jsonb)
       AS r(step_id text, status text, output jsonb, error jsonb, attempts int)
 WHERE NOT EXISTS (  -- a continued segment carries its run's earlier segments' records
       SELECT 1 FROM workflow_runs me
         JOIN workflow_runs w
           ON w.run_id = me.logical_run_id OR w.logical_run_id = me.logical_run_id
         JOIN task_runs t ON t.execution_id = w.execution_id
        WHERE me.execution_id = %(id)s AND w.execution_id <> %(id)s
          AND t.step_id = r.step_id AND t.item = ''
          AND (t.status, t.output, t.error) IS NOT DISTINCT FROM (r.status, r.output, r.error))
ON CONFLICT (execution_id, step_id, item) DO UPDATE SET status = EXCLUDED.status,
       output = EXCLUDED.output, error = EXCLUDED.error,
       attempts = GREATEST(task_runs.attempts, EXCLUDED.attempts), ended_at = EXCLUDED.ended_at,
       updated_at = now(), version = task_runs.version + 1
 WHERE (task_runs.status, task_runs.output, task_runs.error)
       IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.output, EXCLUDED.error)
"""
"""The records of a write at `$.steps`, in one statement: those the rows do not show yet (this
execution's, or an earlier segment's of a run that continued as new)."""
OPEN_GATES_SQL = """
UPDATE gates SET status = 'closed', decided_at = now(), note = %s
 WHERE execution_arn = %s AND status = 'open'
"""


class RunRecords:
    """Writes the run records of executions, fact by fact, on one connection (in the caller's
    transaction)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    # --- the run -------------------------------------------------------------------------------

    def started(self, run: RunRef, start: RunStart) -> None:
        """A run started; a continued segment (its input carries a continuation) names the
        logical run it belongs to and the segment before it."""
        segment = segment_of(start.input)
        self._conn.execute(
            START_SQL,
            (run.execution_id, start.run_id, start.workflow, start.version, _json(start.input),
             start.started_at, start.parent_id, start.parent_step, segment.logical_run_id,
             segment.number, segment.continued_from),
        )  # fmt: skip

    def redriven(self, run: RunRef) -> None:
        """The run runs again after it failed (Step Functions' redrive)."""
        self._conn.execute(REDRIVEN_SQL, (run.execution_id,))

    def finished(self, run: RunRef, end: RunEnd, *, at: datetime | None = None) -> None:
        """The run's end; a failure names the step that failed last (read in the same statement,
        so that it sees this batch's step records without waiting for them). `at`: when the
        steps it leaves unfinished ended."""
        status = _RUN_STATUS.get(end.status, "failed")
        if end.status == "SUCCEEDED" and continued_to(end.output) is not None:
            status = "continued"  # the run goes on in its next segment
            self._conn.execute(CONTINUED_STEPS_SQL, (at, run.execution_id))
        error = None
        if end.status == "ABORTED":
            error = {"type": "cancelled", "message": end.cause or ""}
        elif end.status != "SUCCEEDED" and end.error is not None:
            message, _ = read_cause(end.cause)  # the plain message, whatever wraps it
            error = {"type": error_type_of(end.error), "message": message}
        self._conn.execute(
            FINISHED_SQL,
            {"status": status, "output": _json(end.output), "ended": end.stopped_at,
             "error": _json(error), "id": run.execution_id},
        )  # fmt: skip
        if end.status != "SUCCEEDED":
            self._close_unfinished(run, status, at=at)

    def _close_unfinished(self, run: RunRef, status: str, *, at: datetime | None) -> None:
        """A run that ended badly leaves no step running or waiting and no gate open: a branch
        still waiting for a person when another failed, or when the run was cancelled."""
        message = f"the run {status.replace('_', ' ')} before this step finished"
        ended = {"type": "cancelled", "message": message}
        self._conn.execute(UNFINISHED_STEPS_SQL, (_json(ended), at, run.execution_id))
        self._conn.execute(
            OPEN_GATES_SQL, (message.replace(" before this step finished", ""), run.arn)
        )

    def late_result(self, run: RunRef, status: ExecutionEnd) -> None:
        """A task of an ended run answered: a gate its notification opened while the run was
        ending (after `_close_unfinished` ran) is closed as the others were."""
        if status == "SUCCEEDED":
            return
        ended = _RUN_STATUS.get(status, "failed")
        self._conn.execute(OPEN_GATES_SQL, (f"the run {ended.replace('_', ' ')}", run.arn))

    def revoked(self, tokens: list[str], *, timed_out: bool) -> None:
        """Gate tasks that ended without an answer: a tier that ran out of time is decided by
        the timeout; a task cancelled closes its gate."""
        record_revoked(self._conn, tokens, timed_out=timed_out)

    # --- steps ---------------------------------------------------------------------------------

    def scheduled(self, run: RunRef, call: TaskCall, *, at: datetime | None = None) -> None:
        """A step's Task was scheduled: its record is `running` (a step function) or `waiting`
        (a gate's task token, which also sets the run `waiting` or `paused`). A pause gate
        opened for a step that failed leaves its record `failed`, whether the failure was
        written before the gate was scheduled (Step Functions' order) or with it (the engine
        writes a transition's tasks before its results)."""
        payload = call.payload
        if payload is None or "step_id" not in payload:
            return
        step_id = str(payload["step_id"])
        if call.kind == "callback":
            kind = str(payload.get("kind", "approval"))
            self._conn.execute(
                RUN_STATUS_SQL, (_GATE_STATUS.get(kind, "waiting"), run.execution_id)
            )
            step_status, attempts = "waiting", 0
        elif call.function in STEP_FUNCTIONS:
            step_status = "running"
            retry = payload.get("retry_count") or 0
            attempts = int(retry) + int(payload.get("loop_retries") or 0) + 1
        else:
            return
        self._conn.execute(
            SCHEDULED_SQL,
            {"id": run.execution_id, "step": step_id, "item": _item(payload),
             "status": step_status, "attempts": attempts, "at": at,
             "input": _json((payload.get("context") or {}).get("inputs")),
             "after_failure": call.kind == "callback" and payload.get("kind") in _AFTER_FAILURE},
        )  # fmt: skip

    def task_result(
        self,
        run: RunRef,
        call: TaskCall,
        ok: bool,
        value: Any,
        *,
        cause: str | None = None,
        error: str | None = None,
        answered: bool = False,
        late: bool = False,
        at: datetime | None = None,
    ) -> None:
        """A step function returned: count its cost and tokens, or those a failed attempt
        reported in its error's `cause`; a gate closed: run again (`answered`: through its task
        token, which the gate row records). `late`: its frame had been cancelled (the run failed
        or moved on while it ran): only its spend is counted, so that the run's cost is what the
        budget ledger settled."""
        payload = call.payload
        if payload is None:
            return
        if call.kind == "callback":
            self._conn.execute(RUN_RESUMED_SQL, (run.execution_id,))
            if answered and call.token:
                record_answer(self._conn, call.token, ok=ok, output=value, error=error, cause=cause)
            return
        if call.function not in STEP_FUNCTIONS:
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
            SPEND_SQL,
            (run.execution_id, step_id, item, int(result.get("attempts") or 1), cost, tokens_in,
             tokens_out, cached, usage.get("model"), usage.get("provider"), at),
        )  # fmt: skip
        if item and ok and not late:  # a map item or loop iteration: the step record comes later
            self._conn.execute(
                ITEM_DONE_SQL, (_json(result.get("output")), at, run.execution_id, step_id, item)
            )
        self._conn.execute(RUN_SPEND_SQL, (cost, tokens_in, tokens_out, run.execution_id))
        if run.child:
            self._conn.execute(
                ANCESTORS_SPEND_SQL,
                {"id": run.execution_id, "cost": cost, "in": tokens_in, "out": tokens_out,
                 "at": at},
            )  # fmt: skip

    def written(self, run: RunRef, path: str, value: Any, *, at: datetime | None = None) -> None:
        """A result was written into the state at `path` (a ResultPath): a step's record
        (`$.steps.<id>`) once it is no longer running, or the failed record a block's shared
        tail wrote (its `on error` Task, the render function's `caught` helper, returns the whole
        state: `error.step` names the step)."""
        match = _STEP_RECORD.match(path)
        if match and isinstance(value, dict) and value.get("status") not in (None, "running"):
            self._record(run, match.group(1), value, at=at)
        elif path == "$.steps" and isinstance(value, dict):
            self._records(run, value, at=at)
        elif path == "$":
            self._tail_record(run, value, at=at)

    def _records(self, run: RunRef, steps: dict[str, Any], *, at: datetime | None) -> None:
        """A write of the whole `$.steps`: a Parallel's gathered records, or a route Pass that
        records its router's choice and, as skipped, the steps that choice leaves with no live
        dependency. Each record the rows do not show yet is recorded; the others (a Parallel
        hands back every record its branches already wrote) are left as they are."""
        rows = [
            {"step_id": step_id, "status": str(record["status"]), "output": record.get("output"),
             "error": _error(record.get("error")), "attempts": int(record.get("attempts") or 0)}
            for step_id, record in steps.items()
            if isinstance(record, dict) and record.get("status") not in (None, "running")
        ]  # fmt: skip
        if rows:
            self._conn.execute(
                RECORDS_SQL, {"id": run.execution_id, "records": json_text(rows), "at": at}
            )

    def _tail_record(self, run: RunRef, value: Any, *, at: datetime | None) -> None:
        state = value.get("Payload") if isinstance(value, dict) else None
        error = state.get("error") if isinstance(state, dict) else None
        if not isinstance(error, dict) or error.get("action") not in _FAILED_ACTIONS:
            return
        assert isinstance(state, dict)
        record = (state.get("steps") or {}).get(error.get("step"))
        if isinstance(record, dict) and record.get("status") == "failed":
            self._record(run, str(error["step"]), record, at=at)

    def _record(
        self, run: RunRef, step_id: str, record: dict[str, Any], *, at: datetime | None
    ) -> None:
        self._conn.execute(
            RECORD_SQL,
            (run.execution_id, step_id, str(record.get("status")), _json(record.get("output")),
             _json(_error(record.get("error"))), int(record.get("attempts") or 0), at),
        )  # fmt: skip


def _error(error: Any) -> Any:
    """A record's error as the rows keep it: its type one of the workflow error types."""
    if isinstance(error, dict) and "type" in error:
        return {**error, "type": error_type_of(str(error["type"]))}
    return error
