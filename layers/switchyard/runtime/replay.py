"""Replay: a step of a reset run that comes before the reset's step returns the result the run
it resets recorded, instead of running again.

A reset (`switchyard.local.reset`) names, in the new run's `ResetFrom.reuse`, each step before
the reset's step and the run whose records it replays. When such a step is dispatched, its
function looks up what that step (that map item, that loop iteration) completed with in the run
records (`task_runs`, any segment of the run) and returns it as the step's output, at no cost:
an agent's answer is not asked of the model again, a tool is not called again, a router keeps
its route, and a human gate's decision is sent back at once instead of waiting for a person
(`replayed_gate`, for approval_notify). The step's record says `replayed_from`. A `sub_workflow`
step before the reset's step starts its child again, and every step of that child replays what
the child the original started recorded (`RunContext.replays_child`, set by run_start).

An agent in segments (`continue_as_new`) replays segment by segment: a segment's call whose
record is the summary it handed on returns it marked `continued` again, so the reset run hands
on where the run it resets did, and its last segment replays the answer.

A step with no completed record to replay (it was skipped, it failed, or the records cannot be
read: a function outside the VPC) runs, and its side effects still find their results under the
replayed run's idempotency keys (`StepInvocation.idempotency_key`), so they do not happen twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from psycopg_pool import ConnectionPool

from switchyard.contract import (
    GateKind,
    GateRequest,
    ReplayedChild,
    StepContext,
    StepResult,
    loop_output,
    record_item,
)
from switchyard.runtime.agent_segments import is_summary


class RecordedResults(Protocol):
    def completed(self, run_id: str, step_id: str, item: str) -> Recorded | None:
        """What the step (`item`: '', `[index]` or `#iteration`) of run `run_id` completed
        with; None when it did not complete."""
        ...

    def child_completed(self, child: ReplayedChild, step_id: str, item: str) -> Recorded | None:
        """What the step of the child run `child` names completed with; None as `completed`."""
        ...


@dataclass(frozen=True)
class Recorded:
    run_id: str
    """The run whose record this is."""
    output: Any


class RunRecordResults:
    """Recorded results read from the run records (the local engine's database, or Aurora)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def completed(self, run_id: str, step_id: str, item: str) -> Recorded | None:
        from switchyard.records.store import RunStore  # the records import the gates, and so on

        with self._pool.connection() as conn:
            found = RunStore(conn).completed_output(run_id, step_id, item)
        return Recorded(run_id, found.output) if found is not None else None

    def child_completed(self, child: ReplayedChild, step_id: str, item: str) -> Recorded | None:
        from switchyard.records.store import ChildOf, RunStore

        parent = ChildOf(child.parent_run, child.step, child.item)
        with self._pool.connection() as conn:
            found = RunStore(conn).child_completed_output(parent, step_id, item)
        return Recorded(found[0], found[1].output) if found is not None else None


def replayed_run(context: StepContext, step_id: str) -> str | None:
    """The run whose records step `step_id` replays; None: the step runs (the run is not a
    reset, or the step is the reset's step or downstream of it)."""
    reset = context.run.reset
    return reset.reuse.get(step_id) if reset is not None else None


def recorded_for(
    context: StepContext, step_id: str, results: RecordedResults | None
) -> Recorded | None:
    """The record step `step_id` replays in this run; None: it runs. Every step of a child run
    that a replayed `sub_workflow` step started replays the child that step started before."""
    if results is None:
        return None
    child = context.run.replays_child
    if child is not None:
        return results.child_completed(child, step_id, record_item(context.scope))
    replays = replayed_run(context, step_id)
    if replays is None:
        return None
    return results.completed(replays, step_id, record_item(context.scope))


def replayed_step(
    context: StepContext,
    step_id: str,
    results: RecordedResults | None,
    *,
    segmented: bool = False,
) -> StepResult | None:
    """The result a step function returns without running; None: it runs. `segmented`: the
    step is an agent with `continue_as_new`, whose recorded summary says it continued."""
    recorded = recorded_for(context, step_id, results)
    if recorded is None:
        return None
    scope = context.scope or {}
    return StepResult(
        output=recorded.output,
        attempts=1,
        cost_usd=0.0,
        loop_output=(
            loop_output(recorded.output, scope["iteration"]) if "iteration" in scope else None
        ),
        replayed_from=recorded.run_id,
        continued=segmented and is_summary(recorded.output),
    )


def replayed_gate(request: GateRequest, results: RecordedResults | None) -> Recorded | None:
    """The decision an approval gate replays (its recorded output, marked `replayed_from`);
    None: the gate opens and waits for a person. Only approval gates replay: a pause, budget or
    human gate was opened by a failure of this run, which a person must see."""
    if request.kind is not GateKind.APPROVAL:
        return None
    recorded = recorded_for(request.context, request.step_id, results)
    if recorded is None or not isinstance(recorded.output, dict):
        return None
    return Recorded(recorded.run_id, {**recorded.output, "replayed_from": recorded.run_id})
