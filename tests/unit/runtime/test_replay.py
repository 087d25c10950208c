"""Replay (`switchyard.runtime.replay`): in a run a reset started, a step before the reset's step
returns what the run it resets recorded in the run records (a real PostgreSQL, written by the
real projection): its output at no cost, a loop iteration's with its `iterations`, an approval
gate's decision marked `replayed_from`. A step that did not complete, a step the reset runs
afresh, a run that is not a reset and a gate a failure opened all run (or open) as usual; and
the projection records which run a step replayed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.contract import (
    GateKind,
    GateRequest,
    ResetFrom,
    StepContext,
    StepInvocation,
    WorkflowInfo,
)
from switchyard.records import RunRecords, RunRef, RunStart, TaskCall
from switchyard.runtime.replay import RunRecordResults, replayed_gate, replayed_step
from tests.pg import pg_pool  # noqa: F401  (a pytest fixture)
from tests.unit.runtime.helpers import invocation

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DECISION = {"decision": "approved", "reviewer": "lead", "note": None, "edits": {},
            "decided_at": "2026-12-01T10:00:00Z", "tier": 0}  # fmt: skip


def recorded_run(pool: ConnectionPool) -> str:
    """A run whose triage completed, whose draft failed, whose loop `poll` ran two iterations
    and whose gate `approve` was approved: its run id."""
    name = f"orig-{uuid.uuid4().hex[:8]}"
    arn = f"arn:aws:states:us-east-1:1:execution:m:{name}"
    with pool.connection() as conn:
        conn.execute("INSERT INTO sfn_definitions VALUES ('h', '{}') ON CONFLICT DO NOTHING")
        row = conn.execute(
            "INSERT INTO sfn_executions (arn, machine_arn, definition_hash, name, status,"
            " started_at) VALUES (%s, 'm', 'h', %s, 'SUCCEEDED', now()) RETURNING id",
            (arn, name),
        ).fetchone()
        assert row is not None
        run = RunRef(int(row[0]), arn)
        records = RunRecords(conn)
        records.started(run, RunStart(name, "support", 1, {}, started_at=NOW))
        records.written(run, "$.steps.triage", {"status": "completed", "output": {"text": "ok"}})
        failed = {"status": "failed", "output": None, "error": {"type": "timeout"}}
        records.written(run, "$.steps.draft", failed)
        for iteration in (1, 2):
            call = _step_call("poll", {"iteration": iteration})
            records.scheduled(run, call)
            result = {"output": {"seen": iteration}, "attempts": 1, "cost_usd": 0.5}
            records.task_result(run, call, True, {"Payload": result})
        records.written(run, "$.steps.approve", {"status": "completed", "output": DECISION})
    return name


def _step_call(step_id: str, scope: dict[str, Any] | None = None) -> TaskCall:
    context = {"run": {"id": "x"}, "scope": scope} if scope else {"run": {"id": "x"}}
    payload = {"step_id": step_id, "context": context}
    return TaskCall("lambda", "tool_step", {"Payload": payload})


def _in_reset(
    inv: StepInvocation, original: str, reuse: tuple[str, ...] = ("triage", "draft", "poll")
) -> StepContext:
    run = inv.context.run.model_copy(
        update={
            "id": f"{original}-reset",
            "reset": ResetFrom(run=original, to="send", reuse=dict.fromkeys(reuse, original)),
        }
    )
    return inv.context.model_copy(update={"run": run})


def _gate(kind: GateKind, context: StepContext) -> GateRequest:
    return GateRequest(
        kind=kind,
        step_id="approve",
        workflow=WorkflowInfo(name="support", version=1),
        context=context,
        task_token="token",
    )


def test_a_step_before_the_reset_step_returns_its_recorded_output_at_no_cost(
    pg_pool: ConnectionPool,  # noqa: F811
) -> None:
    original = recorded_run(pg_pool)
    context = _in_reset(invocation("triage", {"type": "agent"}), original)
    result = replayed_step(context, "triage", RunRecordResults(pg_pool))
    assert result is not None
    assert (result.output, result.cost_usd, result.usage) == ({"text": "ok"}, 0.0, None)
    assert result.replayed_from == original


def test_a_loop_iteration_replays_its_own_record_with_its_iterations(
    pg_pool: ConnectionPool,  # noqa: F811
) -> None:
    original = recorded_run(pg_pool)
    context = _in_reset(invocation("poll", {"type": "tool"}, scope={"iteration": 2}), original)
    result = replayed_step(context, "poll", RunRecordResults(pg_pool))
    assert result is not None
    assert result.output == {"seen": 2}
    assert result.loop_output == {"seen": 2, "iterations": 2}


def test_an_agent_in_segments_replays_its_summary_as_continued(
    pg_pool: ConnectionPool,  # noqa: F811
) -> None:
    """A segment's record is the summary it handed on: replayed, it hands on again (else the
    reset run would take the summary for the agent's answer)."""
    original = recorded_run(pg_pool)
    results = RunRecordResults(pg_pool)
    summary = {"continued": True, "summary": "half done", "turns": 3}
    with pg_pool.connection() as conn:
        row = conn.execute(
            "SELECT execution_id FROM workflow_runs WHERE run_id = %s", (original,)
        ).fetchone()
        assert row is not None
        run = RunRef(int(row[0]), f"arn:aws:states:us-east-1:1:execution:m:{original}")
        records = RunRecords(conn)
        for iteration, output in ((1, summary), (2, {"text": "done"})):
            call = _step_call("research", {"iteration": iteration})
            records.scheduled(run, call)
            records.task_result(run, call, True, {"Payload": {"output": output, "attempts": 1}})
    step = {"type": "agent", "continue_as_new": {"after": 2}}
    for iteration, continued in ((1, True), (2, False)):
        inv = invocation("research", step, scope={"iteration": iteration})
        context = _in_reset(inv, original, reuse=("research",))
        result = replayed_step(context, "research", results, segmented=True)
        assert result is not None and result.continued is continued
    first = _in_reset(invocation("research", step, scope={"iteration": 1}), original, ("research",))
    plain = replayed_step(first, "research", results)  # not an agent in segments
    assert plain is not None and plain.continued is False


def test_steps_without_a_completed_record_or_outside_the_replay_run(
    pg_pool: ConnectionPool,  # noqa: F811
) -> None:
    original = recorded_run(pg_pool)
    results = RunRecordResults(pg_pool)
    failed = _in_reset(invocation("draft", {"type": "agent"}), original)
    assert replayed_step(failed, "draft", results) is None  # it failed: it runs again
    third = _in_reset(invocation("poll", {"type": "tool"}, scope={"iteration": 3}), original)
    assert replayed_step(third, "poll", results) is None  # never ran
    fresh = _in_reset(invocation("triage", {"type": "agent"}), original, reuse=("draft",))
    assert replayed_step(fresh, "triage", results) is None  # the reset runs it afresh
    plain = invocation("triage", {"type": "agent"}, run_id=original).context
    assert replayed_step(plain, "triage", results) is None  # not a reset
    assert replayed_step(fresh, "triage", None) is None  # no run records to read


def test_an_approval_gate_replays_its_decision_and_a_failure_gate_opens(
    pg_pool: ConnectionPool,  # noqa: F811
) -> None:
    original = recorded_run(pg_pool)
    results = RunRecordResults(pg_pool)
    context = _in_reset(invocation("approve", {"type": "human_gate"}), original, ("approve",))
    recorded = replayed_gate(_gate(GateKind.APPROVAL, context), results)
    assert recorded is not None
    assert recorded.output == {**DECISION, "replayed_from": original}
    assert replayed_gate(_gate(GateKind.PAUSE, context), results) is None


def test_the_records_say_which_run_a_step_replayed(
    pg_pool: ConnectionPool,  # noqa: F811
) -> None:
    original = recorded_run(pg_pool)
    with pg_pool.connection() as conn:
        arn = f"arn:aws:states:us-east-1:1:execution:m:{original}-reset"
        row = conn.execute(
            "INSERT INTO sfn_executions (arn, machine_arn, definition_hash, name, status,"
            " started_at) VALUES (%s, 'm', 'h', %s, 'RUNNING', now()) RETURNING id",
            (arn, f"{original}-reset"),
        ).fetchone()
        assert row is not None
        run = RunRef(int(row[0]), arn)
        records = RunRecords(conn)
        records.started(run, RunStart(f"{original}-reset", "support", 1, {}, started_at=NOW))
        call = _step_call("triage")
        records.scheduled(run, call)
        replayed = {"output": {"text": "ok"}, "cost_usd": 0, "replayed_from": original}
        records.task_result(run, call, True, {"Payload": replayed})
        gate = TaskCall("callback", "approval_notify", {"Payload": {"step_id": "approve"}}, "t")
        records.scheduled(run, gate)
        records.task_result(run, gate, True, {**DECISION, "replayed_from": original})
        rows = _replayed_column(conn, run.execution_id)
    assert rows == {"triage": original, "approve": original}


def _replayed_column(conn: psycopg.Connection[Any], execution_id: int) -> dict[str, Any]:
    rows = conn.execute(
        "SELECT step_id, replayed_from FROM task_runs WHERE execution_id = %s", (execution_id,)
    ).fetchall()
    return {str(step): replayed for step, replayed in rows}
