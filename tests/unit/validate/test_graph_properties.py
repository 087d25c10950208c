"""On random graphs of up to 200 steps, the validator's cycle and reachability verdicts agree
with networkx, an independent graph library."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from switchyard.diagnostics import Code
from switchyard.validate import WorkflowCatalog, validate_text
from switchyard.validate.graph import analyse


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, list[str]]:
    """Mostly-acyclic random graphs: forward edges, plus a few back edges that make cycles."""
    size = draw(st.integers(min_value=1, max_value=200))
    names = [f"s{i}" for i in range(size)]
    after: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        forward = draw(st.lists(st.integers(0, max(i - 1, 0)), max_size=3)) if i else []
        deps = sorted({names[j] for j in forward if j < i})
        if draw(st.integers(0, 30)) == 0:  # a back edge, now and then
            deps.append(names[draw(st.integers(i, size - 1))])
        after[name] = deps
    return after


def _nx_verdict(after: dict[str, list[str]]) -> tuple[set[str], set[str]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(after)
    graph.add_edges_from((dep, node) for node, deps in after.items() for dep in deps)
    on_cycle = {
        n
        for component in nx.strongly_connected_components(graph)
        for n in component
        if len(component) > 1 or graph.has_edge(n, n)
    }
    blocked = {n for n in graph if n not in on_cycle and nx.ancestors(graph, n) & on_cycle}
    return on_cycle, blocked


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_cycles_and_unreachable_steps_agree_with_networkx(after: dict[str, list[str]]) -> None:
    verdict = analyse(after)
    on_cycle, blocked = _nx_verdict(after)
    assert set(verdict.on_cycle) == on_cycle
    assert set(verdict.unreachable) == blocked
    for cycle in verdict.cycles:  # each reported cycle is a real cycle, in order
        for here, following in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
            assert here in after[following]


def _yaml(after: dict[str, list[str]]) -> str:
    lines = ["switchyard: 1", "name: random", "version: 1", "steps:"]
    for node, deps in after.items():
        lines += [
            f"  {node}:",
            "    type: tool",
            "    tool: http.request",
            "    args: {url: 'https://example.com'}",
            f"    after: [{', '.join(deps)}]",
        ]
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_the_validator_reports_what_the_graph_analysis_finds(after: dict[str, list[str]]) -> None:
    result = validate_text(_yaml(after), catalog=WorkflowCatalog())
    on_cycle, blocked = _nx_verdict(after)
    reported_unreachable = {
        d.path.removeprefix("steps.") for d in result.diagnostics if d.code is Code.UNREACHABLE
    }
    cycles = [d for d in result.diagnostics if d.code is Code.CYCLE]
    assert reported_unreachable == blocked
    assert bool(cycles) == bool(on_cycle)
    assert result.ok == (not on_cycle)
