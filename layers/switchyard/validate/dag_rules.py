"""Rules about how steps connect: dependencies, cycles, reachability, fallbacks, routers."""

from __future__ import annotations

from switchyard.diagnostics import Code
from switchyard.model import AnyRouter, LlmRouter, RuleRouter, ScoreRouter
from switchyard.validate.context import Checks
from switchyard.validate.graph import analyse


def check_dependencies(checks: Checks) -> None:
    """Every `after` entry names a step."""
    for step_id, step in checks.workflow.steps.items():
        for index, dep in enumerate(step.after):
            if not checks.step_exists(dep):
                checks.report(
                    Code.UNKNOWN_STEP,
                    ("steps", step_id, "after", index),
                    f"'{dep}' names no step of this workflow; {_suggest(checks, dep)}",
                )


def check_cycles_and_reachability(checks: Checks) -> None:
    after = {step_id: list(step.after) for step_id, step in checks.workflow.steps.items()}
    after.update(checks.opaque_steps)
    verdict = analyse(after)
    for cycle in verdict.cycles:
        ring = " → ".join([*cycle, cycle[0]])
        first = cycle[0]
        checks.report(
            Code.CYCLE,
            ("steps", first, "after"),
            f"steps depend on each other in a cycle: {ring}; remove one of these dependencies "
            "(use a loop step for repetition)",
        )
    blocked_by = verdict.on_cycle
    for step_id in sorted(verdict.unreachable, key=list(after).index):
        checks.report(
            Code.UNREACHABLE,
            ("steps", step_id),
            f"step '{step_id}' can never start: it depends on a cycle "
            f"({', '.join(sorted(blocked_by))}); break the cycle",
        )


def check_fallbacks(checks: Checks) -> None:
    steps = checks.workflow.steps
    backed_up_by: dict[str, str] = {}
    listed_in_after = {dep: owner for owner, step in steps.items() for dep in step.after}
    for step_id, step in steps.items():
        target = step.fallback
        if target is None:
            continue
        where = ("steps", step_id, "fallback")
        if not checks.step_exists(target):
            checks.report(
                Code.UNKNOWN_STEP,
                where,
                f"fallback '{target}' names no step; {_suggest(checks, target)}",
            )
            continue
        if target == step_id:
            checks.report(Code.BAD_FALLBACK, where, "a step cannot be its own fallback")
            continue
        if target in backed_up_by:
            checks.report(
                Code.BAD_FALLBACK,
                where,
                f"'{target}' is already the fallback of '{backed_up_by[target]}'; give each "
                "step its own fallback step",
            )
            continue
        backed_up_by[target] = step_id
        fallback = steps.get(target)
        if fallback is None:
            continue
        if fallback.after:
            checks.report(
                Code.BAD_FALLBACK,
                ("steps", target, "after"),
                f"'{target}' is the fallback of '{step_id}', and a fallback step has no after of "
                f"its own; remove steps.{target}.after",
            )
        if target in listed_in_after:
            owner = listed_in_after[target]
            checks.report(
                Code.BAD_FALLBACK,
                ("steps", owner, "after"),
                f"'{owner}' depends on '{target}', which runs only as the fallback of "
                f"'{step_id}'; depend on '{step_id}' instead (its output is the fallback's)",
            )
        if isinstance(fallback, RuleRouter | ScoreRouter | LlmRouter):
            checks.report(
                Code.BAD_FALLBACK,
                where,
                f"'{target}' is a router; a fallback must produce an output",
            )
    _fallback_chains(checks, backed_up_by)


def _fallback_chains(checks: Checks, backed_up_by: dict[str, str]) -> None:
    steps = checks.workflow.steps
    reported: set[str] = set()
    for start in backed_up_by.values():
        seen = [start]
        current = steps[start].fallback if start in steps else None
        while current is not None and current in steps:
            if current in seen:
                if current not in reported:
                    reported.update(seen)
                    ring = " → ".join([*seen[seen.index(current) :], current])
                    checks.report(
                        Code.BAD_FALLBACK,
                        ("steps", current, "fallback"),
                        f"fallbacks form a cycle: {ring}; end the chain with a step that has no "
                        "fallback",
                    )
                break
            seen.append(current)
            current = steps[current].fallback


def check_routers(checks: Checks) -> None:
    steps = checks.workflow.steps
    dependents = checks.workflow.dependents()
    for router_id, router in steps.items():
        if not isinstance(router, RuleRouter | ScoreRouter | LlmRouter):
            continue
        targets = _targets(router_id, router)
        for target, where in targets:
            if not checks.step_exists(target):
                checks.report(
                    Code.UNKNOWN_STEP,
                    where,
                    f"route '{target}' names no step; {_suggest(checks, target)}",
                )
            elif target in steps and router_id not in steps[target].after:
                checks.report(
                    Code.BAD_ROUTE,
                    where,
                    f"'{target}' is a route of router '{router_id}' and must list it in after; "
                    f"add '{router_id}' to steps.{target}.after",
                )
        target_ids = {t for t, _ in targets}
        for dependent in dependents.get(router_id, []):
            if dependent not in target_ids:
                index = steps[dependent].after.index(router_id)
                checks.report(
                    Code.BAD_ROUTE,
                    ("steps", dependent, "after", index),
                    f"'{dependent}' lists router '{router_id}' in after but is none of its routes; "
                    f"add a route to '{dependent}' or remove '{router_id}' from its after",
                )
        if isinstance(router, ScoreRouter):
            mins = [t.min for t in router.thresholds]
            if mins != sorted(mins, reverse=True):
                checks.report(
                    Code.BAD_ROUTE,
                    ("steps", router_id, "thresholds"),
                    "thresholds are tried in order and must go from the highest min to the lowest",
                )


def _targets(router_id: str, router: AnyRouter) -> list[tuple[str, tuple[str | int, ...]]]:
    base: tuple[str | int, ...] = ("steps", router_id)
    found: list[tuple[str, tuple[str | int, ...]]] = []
    # Two branches, not one: mypy cannot iterate a union of two list types.
    if isinstance(router, RuleRouter):  # noqa: SIM114
        found += [(r.to, (*base, "routes", i, "to")) for i, r in enumerate(router.routes)]
    elif isinstance(router, LlmRouter):
        found += [(r.to, (*base, "routes", i, "to")) for i, r in enumerate(router.routes)]
    else:
        found += [(t.to, (*base, "thresholds", i, "to")) for i, t in enumerate(router.thresholds)]
    if router.default is not None:
        found.append((router.default, (*base, "default")))
    return found


def _suggest(checks: Checks, name: str) -> str:
    import difflib

    known = list(checks.workflow.steps) + sorted(checks.opaque_steps)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return "check the id against the keys under steps"
