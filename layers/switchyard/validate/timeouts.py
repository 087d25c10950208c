"""Timeouts that agree with the run's limit: a human gate whose tiers together can wait as long as
`budget.max_duration` or longer would be cut off by the run's own timeout (the compiled machine's
`TimeoutSeconds`) before its escalation or its `on_timeout` could act."""

from __future__ import annotations

from switchyard.diagnostics import Code
from switchyard.model import HumanGateStep
from switchyard.model.durations import format_duration
from switchyard.validate.context import Checks


def gate_wait_seconds(gate: HumanGateStep) -> int:
    """The longest a gate can wait: its own timeout, then each escalation tier's (a tier
    without one has the gate's)."""
    return gate.timeout + sum(
        tier.timeout if tier.timeout is not None else gate.timeout for tier in gate.escalation
    )


def check_gate_timeouts(checks: Checks) -> None:
    budget = checks.workflow.budget
    if budget is None or budget.max_duration is None:
        return
    limit = budget.max_duration
    for step_id, step in checks.workflow.steps.items():
        if not isinstance(step, HumanGateStep):
            continue
        wait = gate_wait_seconds(step)
        if wait < limit:
            continue
        tiers = [format_duration(step.timeout)] + [
            format_duration(t.timeout if t.timeout is not None else step.timeout)
            for t in step.escalation
        ]
        spelled = " + ".join(tiers) + (f" = {format_duration(wait)}" if len(tiers) > 1 else "")
        checks.report(
            Code.BAD_TIMEOUT,
            ("steps", step_id, "timeout"),
            f"gate '{step_id}' can wait {spelled}, but budget.max_duration is "
            f"{format_duration(limit)}: the run would time out before the gate's "
            f"{'escalation or ' if step.escalation else ''}on_timeout could act. Shorten the "
            "gate's timeout and escalation, or raise budget.max_duration",
        )
