"""Rule and score routers: a Choice that records which route was taken. The steps after the
router then run only on their own route (see gating.py).

A route Pass may also record, as skipped, the steps further on that its route leaves with no
live dependency (`Skipping`): it then writes the whole of `$.steps` (every record already
there by name, the router's, and the skipped ones) and control goes around those steps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from switchyard.compile.choice import choice_rule, jsonpath
from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.steps.unit import Unit
from switchyard.conditions import parse_condition, parse_path
from switchyard.model import RuleRouter, ScoreRouter


@dataclass(frozen=True)
class Skipping:
    """What the route Passes may write besides the router's record."""

    recorded: frozenset[str]
    """The steps whose records the state surely holds when the router runs: all there is."""
    skipped: Mapping[str | None, tuple[str, ...]]
    """Per route (its target; None: no step), the steps further on that it leaves skipped."""


def rule_or_score_router(
    unit: Unit, router: RuleRouter | ScoreRouter, skipping: Skipping | None = None
) -> Fragment:
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
        taken, skipped = _route(unit, target, reason, skipping)
        name = block.add(unit.name(_named(f"route to {target}", skipped)), taken)
        choices.append({**rule, "Next": name})
        exits.append(_exit(unit, taken, target, skipped))
    default_reason = (
        "no rule matched" if isinstance(router, RuleRouter) else "below every threshold"
    )
    fallback, skipped = _route(unit, router.default, f"{default_reason}: default", skipping)
    fallback_name = block.add(unit.name(_named("default route", skipped)), fallback)
    exits.append(_exit(unit, fallback, router.default, skipped))
    decide: State = {
        "Type": "Choice",
        "Comment": f"'{unit.step_id}': picks the route by its "
        + ("rules, in order" if isinstance(router, RuleRouter) else "score thresholds"),
        "Choices": choices,
        "Default": fallback_name,
    }
    return Fragment(block.add(unit.name(), decide), exits, router=unit.step_id)


def _exit(unit: Unit, state: State, target: str | None, skipped: tuple[str, ...]) -> Exit:
    """A route Pass's way out: the router completed, with this route."""
    return Exit(
        state,
        routed=True,
        route=target,
        step=unit.step_id,
        status="completed",
        skipped_ahead=frozenset(skipped),
    )


def _route(
    unit: Unit, target: str | None, reason: str, skipping: Skipping | None
) -> tuple[State, tuple[str, ...]]:
    chosen = f"'{target}'" if target else "no route"
    record = {"status": "completed", "output": {"route": target, "reason": reason}}
    skipped = skipping.skipped.get(target, ()) if skipping is not None else ()
    if skipping is None or not skipped:
        return {
            "Type": "Pass",
            "Comment": f"'{unit.step_id}' chose {chosen} ({reason})",
            "Result": record,
            "ResultPath": unit.record_path,
        }, ()
    listed = ", ".join(f"'{s}'" for s in skipped)
    records: dict[str, Any] = {f"{s}.$": f"$.steps.{s}" for s in sorted(skipping.recorded)}
    records[unit.step_id] = record
    records |= {s: {"status": "skipped", "output": None} for s in skipped}
    return {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' chose {chosen} ({reason}); so {listed} "
        + ("is" if len(skipped) == 1 else "are")
        + " skipped: no dependency left alive",
        "Parameters": records,
        "ResultPath": "$.steps",
    }, skipped


def _named(route: str, skipped: tuple[str, ...]) -> str:
    """`route to block`, or `route to block, skip borderline, refine` when it skips steps."""
    return f"{route}, skip {', '.join(skipped)}" if skipped else route
