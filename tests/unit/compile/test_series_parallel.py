"""The DAG's series-parallel shape, checked against an independent oracle.

A partial order is series-parallel exactly when it is "N-free": no four steps a, b, c, d with
a<c, b<c, b<d and no other order among them (Valdes, Tarjan, Lawler 1982). The oracle computes
that with networkx's transitive closure and a brute-force search.
"""

from __future__ import annotations

import itertools

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from switchyard.compile.shape import Leaf, Node, Par, Seq, decompose
from switchyard.compile.shape.tree import steps_of


def closure(after: dict[str, list[str]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(after)
    graph.add_edges_from((dep, step) for step, deps in after.items() for dep in deps)
    return nx.transitive_closure_dag(graph)


def n_free(after: dict[str, list[str]]) -> bool:
    order = closure(after)

    def less(x: str, y: str) -> bool:
        return bool(order.has_edge(x, y))

    for a, b, c, d in itertools.permutations(after, 4):
        related = {(x, y) for x in (a, b, c, d) for y in (a, b, c, d) if x != y and less(x, y)}
        if related == {(a, c), (b, c), (b, d)}:
            return False
    return True


def fewest_edges(after: dict[str, list[str]], limit: int = 2) -> int | None:
    """Brute force: the fewest added dependencies that make the order N-free (None: > limit)."""
    order = closure(after)
    unordered = [
        (u, v)
        for u, v in itertools.permutations(after, 2)
        if not order.has_edge(u, v) and not order.has_edge(v, u)
    ]
    for size in range(limit + 1):
        for combo in itertools.combinations(unordered, size):
            trial = {s: list(d) for s, d in after.items()}
            for u, v in combo:
                trial[v].append(u)
            graph = nx.DiGraph([(d, s) for s, ds in trial.items() for d in ds])
            graph.add_nodes_from(trial)
            if nx.is_directed_acyclic_graph(graph) and n_free(trial):
                return size
    return None


def precedes(tree: Node) -> set[tuple[str, str]]:
    """Pairs (x, y) such that the tree runs x before y."""
    if isinstance(tree, Leaf):
        return set()
    pairs: set[tuple[str, str]] = set()
    for item in tree.items:
        pairs |= precedes(item)
    if isinstance(tree, Seq):
        for i, first in enumerate(tree.items):
            for later in tree.items[i + 1 :]:
                pairs |= {(x, y) for x in steps_of(first) for y in steps_of(later)}
    return pairs


@st.composite
def dags(draw: st.DrawFn, max_size: int = 7) -> dict[str, list[str]]:
    size = draw(st.integers(1, max_size))
    names = [f"s{i}" for i in range(size)]
    after: dict[str, list[str]] = {}
    for i, name in enumerate(names):
        deps = draw(st.lists(st.sampled_from(names[:i]), unique=True, max_size=3)) if i else []
        after[name] = deps
    return after


@st.composite
def sp_dags(draw: st.DrawFn) -> dict[str, list[str]]:
    """Series-parallel DAGs built by composition, so no edge may be added to them."""
    counter = iter(range(1000))

    def build(depth: int) -> tuple[list[str], list[str], dict[str, list[str]]]:
        if depth == 0 or draw(st.booleans()):
            name = f"s{next(counter)}"
            return [name], [name], {name: []}
        left, right = build(depth - 1), build(depth - 1)
        if draw(st.booleans()):  # series: every sink of left before every source of right
            merged = {**left[2], **right[2]}
            for source in right[0]:
                merged[source] = merged[source] + left[1]
            return left[0], right[1], merged
        return left[0] + right[0], left[1] + right[1], {**left[2], **right[2]}

    return build(4)[2]


@settings(max_examples=200, deadline=None)
@given(sp_dags())
def test_series_parallel_dags_get_no_extra_edges(after: dict[str, list[str]]) -> None:
    tree, added = decompose(after, sorted(after, key=lambda s: int(s[1:])))
    assert added == []
    assert tree is not None and sorted(steps_of(tree)) == sorted(after)


@settings(max_examples=200, deadline=None)
@given(dags())
def test_every_dag_gets_a_tree_that_keeps_its_order_and_its_steps(
    after: dict[str, list[str]],
) -> None:
    tree, added = decompose(after, list(after))
    assert tree is not None
    assert sorted(steps_of(tree)) == sorted(after)  # each step exactly once
    order = precedes(tree)
    for step, deps in after.items():
        for dep in deps:
            assert (dep, step) in order
    assert (added == []) == n_free(after)


@settings(max_examples=120, deadline=None)
@given(dags(max_size=6))
def test_added_edges_are_as_few_as_a_brute_force_finds(after: dict[str, list[str]]) -> None:
    _, added = decompose(after, list(after))
    best = fewest_edges(after)
    if best is not None:
        assert len(added) == best


def test_the_n_shape_gets_one_edge_that_keeps_chains_short() -> None:
    tree, added = decompose({"a": [], "b": [], "c": ["a"], "d": ["a", "b"]}, ["a", "b", "c", "d"])
    assert [edge.describe() for edge in added] == ["'c' also waits for 'b'"]
    assert tree == Seq((Par((Leaf("a"), Leaf("b"))), Par((Leaf("c"), Leaf("d")))))


def test_parallel_branches_follow_file_order() -> None:
    tree, _ = decompose({"z": [], "a": [], "m": []}, ["z", "a", "m"])
    assert tree == Par((Leaf("z"), Leaf("a"), Leaf("m")))
