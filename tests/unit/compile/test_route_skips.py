"""A route Pass records, as skipped, the steps its route leaves with no live dependency, and
control goes around them: one state where each of them had a check and a skip Pass on the way.
It writes the whole of `$.steps`, naming every record already there, so it does so only where
those are known (docs/compiler.md, "Whether a step runs")."""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from switchyard.compile import compile_workflow
from switchyard.validate import validate_text


def _compile(steps: str) -> dict[str, Any]:
    text = f"switchyard: 1\nname: routed\nversion: 1\ndefaults: {{model: m}}\nsteps:\n{steps}"
    result = validate_text(text)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return compile_workflow(result.workflow).definition


ROUTER = """  a: {type: agent, prompt: p}
  r:
    type: router
    after: [a]
    strategy: rule
    routes: [{when: 'steps.a.output.text == "x"', to: x}]
    default: y
  x: {type: agent, after: [r], prompt: p}
  y: {type: agent, after: [r], prompt: p}
"""


def test_no_route_skips_every_target_and_goes_on_after_them() -> None:
    """A router without a default takes no route when no rule matches: that Pass records both
    targets as skipped and goes to what comes after them."""
    steps = ROUTER.replace("default: y", "default: null").replace(
        "to: x}]", "to: x}, {when: 'steps.a.output.text == \"y\"', to: y}]"
    )
    states = _compile(steps + "  z: {type: agent, after: [x, y], prompt: p}\n")["States"]
    none = states["r:default route, skip x, y, z"]
    assert none["Next"] == "outputs"
    assert none["Parameters"]["z"] == {"status": "skipped", "output": None}
    assert states["r:route to x, skip y"]["Next"] == "x"
    assert states["x"]["Next"] == "z"  # x completed: z runs


def test_with_a_fallback_before_the_router_its_route_passes_write_its_record_only() -> None:
    """A fallback's record is there only when it stood in: the route Pass could not name
    every record, so it writes `$.steps.r` and the steps keep their skip Passes."""
    steps = ROUTER.replace(
        "a: {type: agent, prompt: p}", "a: {type: agent, prompt: p, fallback: f}"
    )
    states = _compile(steps + "  f: {type: agent, prompt: p}\n")["States"]
    assert states["r:route to x"]["ResultPath"] == "$.steps.r"
    assert states["r:route to x"]["Next"] == "x"
    assert states["r:default route"]["Next"] == "x:skip"


def test_a_second_router_writes_its_record_only_while_the_first_ones_skips_are_ahead() -> None:
    """`s` comes before `y`, which `r`'s route to `x` may have recorded as skipped already: a
    route Pass of `s` naming the records it knows would drop that one."""
    steps = """  a: {type: agent, prompt: p}
  r:
    type: router
    after: [a]
    strategy: rule
    routes: [{when: 'steps.a.output.text == "x"', to: x}]
    default: y
  x: {type: agent, after: [r], prompt: p}
  s:
    type: router
    after: [x]
    strategy: rule
    routes: [{when: 'steps.x.output.text == "u"', to: u}]
    default: v
  u: {type: agent, after: [s], prompt: p}
  v: {type: agent, after: [s], prompt: p}
  y: {type: agent, after: [r], prompt: p}
"""
    states = _compile(steps)["States"]
    assert [name for name in states if name.startswith("r:route to x, skip")]
    assert all(
        state["ResultPath"] == "$.steps.s"
        for name, state in states.items()
        if name[:2] == "s:" and "route" in name
    )


def _reachable(definition: dict[str, Any]) -> set[str]:
    states = definition["States"]
    seen: set[str] = set()
    todo = deque([definition["StartAt"]])
    while todo:
        name = todo.popleft()
        if name in seen:
            continue
        seen.add(name)
        state = states[name]
        targets = [state.get("Next"), state.get("Default")]
        targets += [rule.get("Next") for rule in state.get("Choices", [])]
        targets += [catch.get("Next") for catch in state.get("Catch", [])]
        todo.extend(t for t in targets if t)
        for branch in state.get("Branches", []):
            assert _reachable(branch) == set(branch["States"])
    return seen


@st.composite
def routed_workflows(draw: st.DrawFn) -> str:
    size = draw(st.integers(3, 8))
    names = [f"s{i}" for i in range(size)]
    routers = {names[i] for i in draw(st.sets(st.integers(0, size - 2), max_size=2))}
    after: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        after[name] = (
            draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=2)) if i else []
        )
    lines = []
    for name in names:
        deps = f"after: [{', '.join(after[name])}], " if after[name] else ""
        if name not in routers:
            lines.append(f"  {name}: {{type: agent, {deps}prompt: p}}")
            continue
        targets = [n for n in names if name in after[n]]
        assume(targets)
        route = draw(st.sampled_from(targets))
        default = draw(st.sampled_from([*targets, None]))
        lines.append(
            f"  {name}: {{type: router, {deps}strategy: rule, routes: [{{when: 'inputs.k == 1', "
            f"to: {route}}}], default: {default or 'null'}}}"
        )
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None)
@given(routed_workflows())
def test_every_state_of_a_routed_workflow_stays_reachable(steps: str) -> None:
    text = (
        "switchyard: 1\nname: routed\nversion: 1\ndefaults: {model: m}\n"
        f"inputs: {{k: {{type: integer}}}}\nsteps:\n{steps}"
    )
    result = validate_text(text)
    assume(result.workflow is not None)
    assert result.workflow is not None
    definition = compile_workflow(result.workflow).definition
    assert _reachable(definition) == set(definition["States"])
