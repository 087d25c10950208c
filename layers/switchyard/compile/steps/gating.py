"""Whether a step runs: its dependencies are alive and its `when` holds; otherwise it is skipped.

A dependency is alive when it completed, or failed but a fallback stood in for it. A router is
alive for the one target it chose. A step whose dependencies are all dead, or whose `when` is
false, is recorded as `skipped`, and a dead branch stays dead.
"""

from __future__ import annotations

from graphlib import TopologicalSorter
from typing import Any

from switchyard.compile.choice import choice_rule, negate
from switchyard.compile.fragments import Choosing, Decision, Exit, Fragment, State
from switchyard.compile.steps.unit import Unit
from switchyard.conditions import parse_condition
from switchyard.model import (
    AgentStep,
    HumanGateStep,
    LlmRouter,
    OnError,
    RuleRouter,
    ScoreRouter,
    ToolStep,
    Workflow,
)

Rule = dict[str, Any]


def may_be_dead(workflow: Workflow, step_id: str) -> bool:
    """Whether a dependent of `step_id` can find it not alive while the run goes on.

    It cannot when the step always runs (no `when`, and some dependency of it is surely alive)
    and either ends completed or stops the run: it is no router (a router is alive only for the
    route it chose), and a failure with `on_error: fail` fails the run while `pause` runs the
    step again. `continue` leaves it failed, and a fallback may itself be dead."""
    return _deadness(workflow)[step_id][0]


def may_be_skipped(workflow: Workflow, step_id: str) -> bool:
    """Whether the step needs a check before it: it has a `when`, or every dependency of it
    may be dead (one surely alive dependency is enough for it to run)."""
    return _deadness(workflow)[step_id][1]


_CACHE: dict[int, tuple[Workflow, dict[str, tuple[bool, bool]]]] = {}
"""Per workflow being compiled: (may be dead, may be skipped) for every step, computed once."""


def _deadness(workflow: Workflow) -> dict[str, tuple[bool, bool]]:
    cached = _CACHE.get(id(workflow))
    if cached is not None and cached[0] is workflow:
        return cached[1]
    found: dict[str, tuple[bool, bool]] = {}

    def visit(step_id: str, path: frozenset[str]) -> tuple[bool, bool]:
        if step_id in found:
            return found[step_id]
        if step_id in path:  # pragma: no cover - the validator refuses cycles
            return True, True
        step = workflow.steps[step_id]
        inner = path | {step_id}
        skipped = step.when is not None or (
            bool(step.after) and all(visit(dep, inner)[0] for dep in step.after)
        )
        dead = (
            isinstance(step, RuleRouter | ScoreRouter | LlmRouter)
            or skipped
            or (step.on_error or workflow.on_error) is OnError.CONTINUE
            or (step.fallback is not None and visit(step.fallback, inner)[0])
        )
        found[step_id] = (dead, skipped)
        return found[step_id]

    # Dependencies first, so that a long chain does not recurse deeply.
    order = TopologicalSorter({s: list(step.after) for s, step in workflow.steps.items()})
    for step_id in order.static_order():
        visit(step_id, frozenset())
    if len(_CACHE) > 32:
        _CACHE.clear()
    _CACHE[id(workflow)] = (workflow, found)
    return found


def alive(unit: Unit, dep: str) -> Rule:
    """True when `dep` lets `unit`'s step run."""
    record = f"$.steps.{dep}"
    completed = {"Variable": f"{record}.status", "StringEquals": "completed"}
    if isinstance(unit.workflow.steps.get(dep), RuleRouter | ScoreRouter | LlmRouter):
        chosen = {"Variable": f"{record}.output.route", "StringEquals": unit.step_id}
        return {"And": [completed, chosen]}
    rescued = {"Variable": f"{record}.fallback", "IsPresent": True}
    return {"Or": [completed, rescued]}


def skip_rule(unit: Unit) -> Rule | None:
    """A Choice rule that is true when the step must be skipped, or None when it always runs."""
    step = unit.step
    reasons: list[Rule] = []
    if step.after and not _always_alive(unit):
        deps = [alive(unit, dep) for dep in step.after]
        reasons.append(negate(deps[0] if len(deps) == 1 else {"Or": deps}))
    if step.when is not None:
        reasons.append(negate(choice_rule(parse_condition(step.when))))
    if not reasons:
        return None
    return reasons[0] if len(reasons) == 1 else {"Or": reasons}


def _always_alive(unit: Unit) -> bool:
    return any(not may_be_dead(unit.workflow, dep) for dep in unit.step.after)


def guarded(unit: Unit, body: Fragment) -> Fragment:
    """`body`, preceded by a check that skips the step when it must not run."""
    rule = skip_rule(unit)
    if rule is None:
        body.step = unit.step_id
        return body
    skip: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' is skipped: no dependency completed, or its when is false",
        "Result": {"status": "skipped", "output": None},
        "ResultPath": unit.record_path,
    }
    skip_name = unit.block.add(unit.name("skip"), skip)
    skipped = Exit(skip, step=unit.step_id, status="skipped")
    check: State = {
        "Type": "Choice",
        "Comment": f"does '{unit.step_id}' run? Not when no dependency is alive"
        + (" or its when is false" if unit.step.when is not None else ""),
        "Choices": [{**rule, "Next": skip_name}],
        "Default": body.start,
    }
    check_name = unit.block.add(unit.name("check"), check)
    chosen_by = Choosing(
        _only_router(unit),
        unit.step_id,
        body.start,
        skip_name,
        check_name,
        unit.block,
        decide=lambda exit_: _decided(unit, exit_),
        removable=_names_its_after(unit),
    )
    return Fragment(check_name, [skipped, *body.exits], chosen_by=chosen_by, step=unit.step_id)


def _decided(unit: Unit, exit_: Exit) -> Decision | None:
    """Whether the step runs, known from how one dependency ended, as the exit says: a
    dependency that completed is alive (a router's only for its route, which only its route
    Pass knows), so a step without a `when` runs; a step whose one dependency was skipped is
    skipped."""
    step, dep = unit.step, exit_.step
    if dep is None or exit_.status is None or dep not in step.after:
        return None
    if exit_.status == "skipped":
        return "skip" if list(step.after) == [dep] else None
    if step.when is not None:
        return None
    if not isinstance(unit.workflow.steps[dep], RuleRouter | ScoreRouter | LlmRouter):
        return "run"
    return "run" if exit_.routed and exit_.route == unit.step_id else None


def _only_router(unit: Unit) -> str | None:
    """The rule or score router whose choice alone decides whether the step runs: its only
    dependency, and it has no `when`. Only for steps whose Task names their `after` (agent, tool,
    LLM router, human gate), from which the dashboard draws the step's edges without the check."""
    step = unit.step
    if step.when is not None or len(step.after) != 1:
        return None
    (dep,) = step.after
    decides = isinstance(unit.workflow.steps[dep], RuleRouter | ScoreRouter)
    return dep if decides and _names_its_after(unit) else None


def _names_its_after(unit: Unit) -> bool:
    """Agent, tool, LLM-router and human-gate steps name their `after` in their Task, from
    which the dashboard draws the step's edges when it has no check."""
    named = isinstance(unit.step, AgentStep | ToolStep | LlmRouter | HumanGateStep)
    return named and unit.record_path == unit.step_record
