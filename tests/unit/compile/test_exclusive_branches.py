"""Parallel branches that wait on one router run one after another: at most one of them runs a
step (the router chose it), so a `Parallel`, its merge and a failure tail per branch buy nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from switchyard.compile import compile_workflow
from switchyard.compile.shape import Leaf, Par, Seq, decompose
from switchyard.compile.shape.exclusive import gating_router, serialize_exclusive
from switchyard.compile.shape.tree import steps_of
from switchyard.validate import validate_text
from tests.unit.compile.test_series_parallel import precedes


def _kinds(definition: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for state in definition["States"].values():
        found.append(state["Type"])
        for branch in state.get("Branches", []):
            found += _kinds(branch)
    return found


def _compile(steps: str) -> dict[str, Any]:
    text = f"switchyard: 1\nname: routed\nversion: 1\ndefaults: {{model: m}}\nsteps:\n{steps}"
    result = validate_text(text)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return compile_workflow(result.workflow).definition


ROUTED = """  score: {type: agent, prompt: p}
  triage:
    type: router
    after: [score]
    strategy: rule
    routes: [{when: 'steps.score.output.text == "x"', to: fix}]
    default: publish
  fix: {type: agent, after: [triage], prompt: p}
  review: {type: agent, after: [fix], prompt: p}
  publish: {type: agent, after: [triage], prompt: p}
"""


def test_branches_on_one_router_become_one_sequence_in_one_block() -> None:
    definition = _compile(ROUTED)
    assert "Parallel" not in _kinds(definition)
    states = definition["States"]
    # The three steps share the machine's one tail; no branch has a tail of its own.
    assert sum(1 for name in states if name.startswith("on error")) == 1
    # One branch after the other: `review` then comes before `publish`, which the route to
    # `fix` has already recorded as skipped, so `review` goes around it.
    assert states["review"]["Next"] == "outputs"


def test_the_routes_decide_the_steps_after_the_router_without_a_check() -> None:
    """Each route Pass records the router's choice and, as skipped, the steps it leaves with
    no live dependency (`fix` and `review` after it; `publish`), and goes straight to the step
    it chose: no step has a check or a skip Pass left."""
    states = _compile(ROUTED)["States"]
    assert not [name for name in states if name.endswith((":check", ":skip"))]
    to_fix = states["triage:route to fix, skip publish"]
    assert to_fix["Next"] == "fix"
    assert to_fix["ResultPath"] == "$.steps"
    assert to_fix["Parameters"] == {
        "score.$": "$.steps.score",  # every record already there, by name
        "triage": {
            "status": "completed",
            "output": {"route": "fix", "reason": 'rule 1: steps.score.output.text == "x"'},
        },
        "publish": {"status": "skipped", "output": None},
    }
    assert "'publish' is skipped" in to_fix["Comment"]
    assert states["triage:default route, skip fix, review"]["Next"] == "publish"
    assert states["fix"]["Next"] == "review"
    assert states["review"]["Next"] == states["publish"]["Next"] == "outputs"


def test_a_loop_right_after_its_router_keeps_its_check() -> None:
    """The dashboard draws a loop's edges from its check (its Task does not name `after`)."""
    looped = ROUTED.replace(
        "fix: {type: agent, after: [triage], prompt: p}",
        "fix: {type: loop, after: [triage], max_iterations: 2, step: {type: agent, prompt: p}}",
    )
    states = _compile(looped)["States"]
    assert states["triage:route to fix, skip publish"]["Next"] == "fix:check"


def test_a_branch_that_runs_whatever_the_router_chose_stays_side_by_side() -> None:
    definition = _compile(ROUTED + "  audit: {type: agent, after: [score], prompt: p}\n")
    (parallel,) = [s for s in definition["States"].values() if s["Type"] == "Parallel"]
    # `audit` waits on `score` only: it runs beside the router's targets, which run one after
    # the other in one branch.
    assert len(parallel["Branches"]) == 2
    firsts = sorted(branch["StartAt"] for branch in parallel["Branches"])
    assert firsts == ["audit", "triage"]


def test_a_step_that_also_waits_on_another_step_keeps_its_branch_apart() -> None:
    after = {"r": [], "a": ["r"], "x": [], "b": ["r", "x"]}
    assert gating_router(Leaf("a"), after, {"r"}) == "r"
    assert gating_router(Leaf("b"), after, {"r"}) is None  # x alone can run b
    assert gating_router(Seq((Leaf("a"), Leaf("c"))), {**after, "c": ["a"]}, {"r"}) == "r"


ROUTERS = st.sets(st.integers(0, 6), max_size=3)


@st.composite
def routed_dags(draw: st.DrawFn) -> tuple[dict[str, list[str]], set[str]]:
    size = draw(st.integers(2, 8))
    names = [f"s{i}" for i in range(size)]
    after: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        deps = draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=2)) if i else []
        after[name] = deps
    routers = {names[i] for i in draw(ROUTERS) if i < size}
    return after, routers


@settings(max_examples=300, deadline=None)
@given(routed_dags())
def test_serializing_keeps_every_step_and_every_dependency(
    case: tuple[dict[str, list[str]], set[str]],
) -> None:
    after, routers = case
    order = list(after)
    tree, _ = decompose(after, order)
    assert tree is not None
    serial = serialize_exclusive(tree, after, routers, {s: i for i, s in enumerate(order)})
    assert sorted(steps_of(serial)) == sorted(after)
    runs_before = precedes(serial)
    assert all((dep, step) in runs_before for step, deps in after.items() for dep in deps)
    # What runs side by side now ran side by side before: serializing only adds order.
    assert precedes(tree) <= runs_before
    for node in _pars(serial):
        gated = [gating_router(item, after, routers) for item in node.items]
        real = [router for router in gated if router is not None]
        assert len(real) == len(set(real))  # no two branches left on the same router


def _pars(node: Leaf | Seq | Par) -> list[Par]:
    if isinstance(node, Leaf):
        return []
    found = [node] if isinstance(node, Par) else []
    for item in node.items:
        found += _pars(item)
    return found
