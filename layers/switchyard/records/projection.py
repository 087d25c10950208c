"""The run records (`workflow_runs`, `task_runs`): what to write from an execution's facts
(the statements are `RunStore`'s, `switchyard.records.store`).

Two callers feed it the same facts about an execution, in the order they happened:
- the local engine, through its hooks (`switchyard.records.engine_hooks.RunRecordHooks`), from
  each transition, in the transaction that commits the transition;
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

import json
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

import psycopg

from switchyard.contract import PARENT_LINK_KEY, continued_to, error_type_of, record_item
from switchyard.contract.errors import read_cause, read_spend
from switchyard.gates.store import GateStore
from switchyard.records.jsonb import json_text
from switchyard.records.segments import segment_of
from switchyard.records.store import RunStore

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
    return record_item((payload.get("context") or {}).get("scope"))


class RunRecords:
    """Writes the run records of executions, fact by fact, on one connection (in the caller's
    transaction)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._store = RunStore(conn)
        self._gates = GateStore.on(conn)

    # --- the run -------------------------------------------------------------------------------

    def started(self, run: RunRef, start: RunStart) -> None:
        """A run started; a continued segment (its input carries a continuation) names the
        logical run it belongs to and the segment before it."""
        segment = segment_of(start.input)
        self._store.started(
            (run.execution_id, start.run_id, start.workflow, start.version, _json(start.input),
             start.started_at, start.parent_id, start.parent_step, segment.logical_run_id,
             segment.number, segment.continued_from),
        )  # fmt: skip

    def redriven(self, run: RunRef) -> None:
        """The run runs again after it failed (Step Functions' redrive)."""
        self._store.redriven(run.execution_id)

    def finished(self, run: RunRef, end: RunEnd, *, at: datetime | None = None) -> None:
        """The run's end; a failure names the step that failed last (read in the same statement,
        so that it sees this batch's step records without waiting for them). `at`: when the
        steps it leaves unfinished ended."""
        status = _RUN_STATUS.get(end.status, "failed")
        if end.status == "SUCCEEDED" and continued_to(end.output) is not None:
            status = "continued"  # the run goes on in its next segment
            self._store.continued_steps(run.execution_id, at)
        error = None
        if end.status == "ABORTED":
            error = {"type": "cancelled", "message": end.cause or ""}
        elif end.status != "SUCCEEDED" and end.error is not None:
            message, _ = read_cause(end.cause)  # the plain message, whatever wraps it
            error = {"type": error_type_of(end.error), "message": message}
        self._store.finished(
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
        self._store.close_unfinished_steps(run.execution_id, _json(ended), at)
        self._gates.close_open(run.arn, note=message.replace(" before this step finished", ""))

    def late_result(self, run: RunRef, status: ExecutionEnd) -> None:
        """A task of an ended run answered: a gate its notification opened while the run was
        ending (after `_close_unfinished` ran) is closed as the others were."""
        if status == "SUCCEEDED":
            return
        ended = _RUN_STATUS.get(status, "failed")
        self._gates.close_open(run.arn, note=f"the run {ended.replace('_', ' ')}")

    def revoked(self, tokens: list[str], *, timed_out: bool) -> None:
        """Gate tasks that ended without an answer: a tier that ran out of time is decided by
        the timeout; a task cancelled closes its gate."""
        self._gates.record_revoked(tokens, timed_out=timed_out)

    # --- steps ---------------------------------------------------------------------------------

    def scheduled(self, run: RunRef, call: TaskCall, *, at: datetime | None = None) -> None:
        """A step's Task was scheduled: its record is `running` (a step function) or `waiting`
        (a gate's task token, which also sets the run `waiting` or `paused`). A pause gate
        opened for a step that failed leaves its record `failed`, whether the failure was
        written before the gate was scheduled (Step Functions' order) or with it (the engine
        writes a transition's tasks before its results)."""
        if call.kind == "child":
            self._child_scheduled(run, call, at=at)
            return
        payload = call.payload
        if payload is None or "step_id" not in payload:
            return
        step_id = str(payload["step_id"])
        if call.kind == "callback":
            kind = str(payload.get("kind", "approval"))
            self._store.set_status(run.execution_id, _GATE_STATUS.get(kind, "waiting"))
            step_status, attempts = "waiting", 0
        elif call.function in STEP_FUNCTIONS:
            step_status = "running"
            retry = payload.get("retry_count") or 0
            attempts = int(retry) + int(payload.get("loop_retries") or 0) + 1
        else:
            return
        self._store.scheduled(
            {"id": run.execution_id, "step": step_id, "item": _item(payload),
             "status": step_status, "attempts": attempts, "at": at,
             "input": _json((payload.get("context") or {}).get("inputs")),
             "after_failure": call.kind == "callback" and payload.get("kind") in _AFTER_FAILURE},
        )  # fmt: skip

    def _child_scheduled(self, run: RunRef, call: TaskCall, *, at: datetime | None) -> None:
        """A `sub_workflow` step started its child: its record is `running` (so its page lists
        the child while it runs). A map's or loop's child is counted by its items instead."""
        parameters = call.parameters if isinstance(call.parameters, dict) else {}
        given = parameters.get("Input")
        if isinstance(given, str):
            try:
                given = json.loads(given)
            except ValueError:
                return
        link = given.get(PARENT_LINK_KEY) if isinstance(given, dict) else None
        if not isinstance(link, dict) or link.get("item") or not isinstance(link.get("step"), str):
            return
        self._store.scheduled(
            {"id": run.execution_id, "step": link["step"], "item": "", "status": "running",
             "attempts": 1, "at": at, "input": None, "after_failure": False},
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
        budget ledger settled. A step or gate that replayed a recorded result (a reset run's:
        `switchyard.runtime.replay`) says so in its record."""
        payload = call.payload
        if payload is None:
            return
        if call.kind == "callback":
            self._store.resumed(run.execution_id)
            if answered and call.token:
                self._gates.record_answer(call.token, ok=ok, output=value, error=error, cause=cause)
            if ok:
                self._replayed(run, payload, value)
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
        self._store.spent(
            (run.execution_id, step_id, item, int(result.get("attempts") or 1), cost, tokens_in,
             tokens_out, cached, usage.get("model"), usage.get("provider"), at),
        )  # fmt: skip
        if item and ok and not late:  # a map item or loop iteration: the step record comes later
            self._store.item_done(
                (_json(result.get("output")), at, run.execution_id, step_id, item)
            )
        if ok:
            self._replayed(run, payload, result)
        self._store.run_spent(run.execution_id, cost, tokens_in, tokens_out)
        if run.child:
            self._store.ancestors_spent(
                {"id": run.execution_id, "cost": cost, "in": tokens_in, "out": tokens_out,
                 "at": at},
            )  # fmt: skip

    def _replayed(self, run: RunRef, payload: dict[str, Any], result: Any) -> None:
        replayed = result.get("replayed_from") if isinstance(result, dict) else None
        if isinstance(replayed, str):
            step_id = str(payload.get("step_id"))
            self._store.replayed(run.execution_id, step_id, _item(payload), replayed)

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
            self._store.records_written(
                {"id": run.execution_id, "records": json_text(rows), "at": at}
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
        self._store.recorded(
            (run.execution_id, step_id, str(record.get("status")), _json(record.get("output")),
             _json(_error(record.get("error"))), int(record.get("attempts") or 0), at),
        )  # fmt: skip


def _error(error: Any) -> Any:
    """A record's error as the rows keep it: its type one of the workflow error types."""
    if isinstance(error, dict) and "type" in error:
        return {**error, "type": error_type_of(str(error["type"]))}
    return error
