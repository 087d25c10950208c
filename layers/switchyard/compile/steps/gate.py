"""Human gates: a task token per tier, escalating when a tier's time runs out, then `on_timeout`."""

from __future__ import annotations

from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.steps.failure import Fallback, catch, caught_into, failure_path
from switchyard.compile.steps.unit import LAMBDA_CALLBACK, Unit, function, step_config
from switchyard.contract import FunctionName, GateKind
from switchyard.contract.errors import HEARTBEAT_TIMEOUT, TASK_TIMEOUT
from switchyard.model import HumanGateStep, OnError


def human_gate(
    unit: Unit, gate: HumanGateStep, *, on_error: OnError, fallback: Fallback | None
) -> Fragment:
    block = unit.block
    tiers = [(gate.assignee, gate.timeout)] + [
        (tier.assignee, tier.timeout or gate.timeout) for tier in gate.escalation
    ]
    tasks = [
        _tier_task(unit, gate, index, assignee, timeout)
        for index, (assignee, timeout) in enumerate(tiers)
    ]
    names = [
        block.add(unit.name() if index == 0 else unit.name(f"tier {index + 1}"), task)
        for index, task in enumerate(tasks)
    ]
    failure = failure_path(unit, resume=names[0], on_error=on_error, fallback=fallback)
    exits = [unit.completed(task) for task in tasks]
    for index, task in enumerate(tasks):
        timed_out = (
            names[index + 1]
            if index + 1 < len(tasks)
            else _on_timeout(unit, gate, len(tasks) - 1, failure, exits)
        )
        timeouts = [TASK_TIMEOUT, HEARTBEAT_TIMEOUT]
        task["Catch"] = [
            catch(timeouts, timed_out)
            if timed_out != failure.start
            else caught_into(unit, timeouts, timed_out),
            caught_into(unit, ["States.ALL"], failure.start),
        ]
    return Fragment(names[0], exits + failure.exits)


def _tier_task(unit: Unit, gate: HumanGateStep, tier: int, assignee: str, timeout: int) -> State:
    return {
        "Type": "Task",
        "Comment": f"waits for {assignee} to approve or reject (tier {tier + 1}, {timeout} s)",
        "Resource": LAMBDA_CALLBACK,
        "Parameters": {
            "FunctionName": function(FunctionName.APPROVAL_NOTIFY),
            "Payload": {
                "kind": GateKind.APPROVAL.value,
                "step_id": unit.step_id,
                "gate": step_config(unit.workflow, gate),
                "workflow": unit.workflow_info(),
                "context": unit.context(gate),
                "tier": tier,
                "assignee": assignee,
                "timeout_seconds": timeout,
                "task_token.$": "$$.Task.Token",
                "execution_arn.$": "$$.Execution.Id",
            },
        },
        "TimeoutSeconds": max(1, timeout),
        "ResultSelector": {"status": "completed", "output.$": "$"},
        "ResultPath": unit.record_path,
    }


def _on_timeout(
    unit: Unit, gate: HumanGateStep, last_tier: int, failure: Fragment, exits: list[Exit]
) -> str:
    """After the last tier: approve, reject or fail the step, as `on_timeout` says."""
    block = unit.block
    if gate.on_timeout == "approve":
        approved: State = {
            "Type": "Pass",
            "Comment": "nobody decided in time: approved, as on_timeout says",
            "Parameters": {
                "status": "completed",
                "output": {
                    "decision": "approved",
                    "reviewer": None,
                    "note": "approved automatically: nobody decided in time",
                    "edits": {},
                    "decided_at.$": "$$.State.EnteredTime",
                    "tier": last_tier,
                },
            },
            "ResultPath": unit.record_path,
        }
        exits.append(unit.completed(approved))
        return block.add(unit.name("approved on timeout"), approved)
    # reject or fail: the tail's `on error` turns the last tier's timeout into `rejected` or
    # `timeout` (its table has the gate's on_timeout).
    return failure.start
