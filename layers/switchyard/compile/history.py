"""Worst-case history events of one run, against Step Functions' limit of 25,000 per execution.

Counted the way Step Functions writes them: a Lambda Task that succeeds writes 5 events
(entered, scheduled, started, succeeded, exited) and each failed attempt 3 more; a Pass or Choice
writes 2; a map writes 2 per item around its item's events; a loop repeats its iteration's events
(a loop that continues as new: one segment's `after` iterations, each segment an execution).
"""

from __future__ import annotations

from switchyard.model import (
    AgentBody,
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    RetryPolicy,
    RuleRouter,
    ScoreRouter,
    Step,
    SubWorkflowBody,
    ToolBody,
    Workflow,
)

LIMIT = 25_000
WARN_AT = 20_000
ASSUMED_MAP_ITEMS = 40
"""Items assumed for a map whose list has no `maxItems` in the workflow's inputs."""

_TASK = 5
_FAILED_ATTEMPT = 3
_PASS = 2
_FAILURE_PATH = _TASK + _PASS + _TASK + _PASS + _PASS  # the shared tail: on error, after error,
# dead letter, after error again, then the fallback decision or the run's Fail


def worst_case_events(workflow: Workflow) -> tuple[int, list[str]]:
    """The most events a run can write, and the assumptions the estimate made."""
    assumptions: list[str] = []
    total = 4  # execution started/succeeded, run_start Task, outputs
    total += _TASK
    for step_id, step in workflow.steps.items():
        total += _PASS * 2  # the check and (at most) a skip
        total += _step_events(step, workflow, step_id, assumptions)
        total += _FAILURE_PATH
    total += 6 * len(workflow.steps)  # Parallel blocks and merges, at most one per step
    return total, assumptions


def _attempts(policy: RetryPolicy | None, workflow: Workflow) -> int:
    policy = policy or workflow.defaults.retry or RetryPolicy()
    return policy.max_attempts


def _body_events(body: AgentBody | ToolBody | SubWorkflowBody | Step, workflow: Workflow) -> int:
    attempts = _attempts(getattr(body, "retry", None), workflow)
    return _TASK + 1 + (attempts - 1) * (_FAILED_ATTEMPT + 2)


def _step_events(step: Step, workflow: Workflow, step_id: str, assumptions: list[str]) -> int:
    if isinstance(step, HumanGateStep):
        return (_TASK + 1) * (1 + len(step.escalation)) + _PASS
    if isinstance(step, RuleRouter | ScoreRouter):
        return _PASS * 2
    if isinstance(step, AgentBody) and step.continue_as_new is not None:
        # one call per segment: the segment's start, the call and its Choice, the hand-over
        return _PASS * 2 + _body_events(step, workflow) + _PASS * 3 + _TASK
    if isinstance(step, LlmRouter | AgentBody | ToolBody | SubWorkflowBody):
        return _body_events(step, workflow)
    if isinstance(step, MapStep):
        items = _map_items(step, workflow)
        if items is None:
            items = ASSUMED_MAP_ITEMS
            assumptions.append(
                f"map '{step_id}' has no maxItems on its list; assumed {ASSUMED_MAP_ITEMS} items"
            )
        checks = _composite_extras(step)
        per_item = 2 + _body_events(step.step, workflow) + (_PASS if step.timeout else 0)
        return 6 + checks + items * per_item
    if isinstance(step, LoopStep):
        per_iteration = _body_events(step.step, workflow) + (3 if step.timeout else 2) * _PASS
        iterations = step.max_iterations
        if step.continue_as_new is not None:  # one segment's iterations, then the hand-over
            iterations = min(iterations, step.continue_as_new.after)
            handing_on = _PASS * 3 + _TASK * (2 if step.continue_as_new.summary else 1)
            return _PASS * 2 + _composite_extras(step) + iterations * per_iteration + handing_on
        return _PASS + _composite_extras(step) + iterations * per_iteration
    return _TASK  # pragma: no cover - every step type is handled above


def _composite_extras(step: MapStep | LoopStep) -> int:
    """A map's or loop's deadline Task (its `timeout`) and output check (its `output_schema`)."""
    return (_TASK if step.timeout else 0) + (_TASK if step.output_schema is not None else 0)


def _map_items(step: MapStep, workflow: Workflow) -> int | None:
    text = step.items.strip()
    if text.startswith("{{") and text.endswith("}}"):
        expression = text[2:-2].strip()
        if expression.startswith("inputs.") and "." not in expression[len("inputs.") :]:
            schema = workflow.inputs.get(expression[len("inputs.") :], {})
            value = schema.get("maxItems")
            return value if isinstance(value, int) else None
    return None
