"""Rule and score routers: a Choice that records which route was taken. The steps after the
router then run only on their own route (see gating.py)."""

from __future__ import annotations

from typing import Any

from switchyard.compile.choice import choice_rule, jsonpath
from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.steps.unit import Unit
from switchyard.conditions import parse_condition, parse_path
from switchyard.model import RuleRouter, ScoreRouter


def rule_or_score_router(unit: Unit, router: RuleRouter | ScoreRouter) -> Fragment:
    block = unit.block
    choices: list[dict[str, Any]] = []
    exits: list[Exit] = []
    if isinstance(router, RuleRouter):
        options = [
            (choice_rule(parse_condition(route.when)), route.to, f"rule {i + 1}: {route.when}")
            for i, route in enumerate(router.routes)
        ]
    else:
        score = jsonpath(parse_path(router.score))
        options = [
            (
                {
                    "And": [
                        {"Variable": score, "IsPresent": True},
                        {"Variable": score, "IsNumeric": True},
                        {"Variable": score, "NumericGreaterThanEquals": threshold.min},
                    ]
                },
                threshold.to,
                f"{router.score} >= {threshold.min}",
            )
            for threshold in router.thresholds
        ]
    for rule, target, reason in options:
        taken = _route(unit, target, reason)
        choices.append({**rule, "Next": block.add(unit.name(f"route to {target}"), taken)})
        exits.append(Exit(taken, routed=True, route=target))
    default_reason = (
        "no rule matched" if isinstance(router, RuleRouter) else "below every threshold"
    )
    fallback = _route(unit, router.default, f"{default_reason}: default")
    fallback_name = block.add(unit.name("default route"), fallback)
    exits.append(Exit(fallback, routed=True, route=router.default))
    decide: State = {
        "Type": "Choice",
        "Comment": f"'{unit.step_id}': picks the route by its "
        + ("rules, in order" if isinstance(router, RuleRouter) else "score thresholds"),
        "Choices": choices,
        "Default": fallback_name,
    }
    return Fragment(block.add(unit.name(), decide), exits, router=unit.step_id)


def _route(unit: Unit, target: str | None, reason: str) -> State:
    chosen = f"'{target}'" if target else "no route"
    return {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' chose {chosen} ({reason})",
        "Result": {"status": "completed", "output": {"route": target, "reason": reason}},
        "ResultPath": unit.record_path,
    }
