"""Parallel branches of which at most one can run a step: one branch, one after another.

A router is alive for one target only (the route it chose), and a step none of whose
dependencies is alive is skipped. So a branch whose every step waits, through steps of that
branch only, on one router can run only if that router chose a step in it; of several such
branches on the same router (`borderline` or `block` after `triage`), at most one runs a step
and the others only record their steps as skipped. Side by side they would cost a `Parallel`, a
merge, and a failure tail per branch (a branch's states cannot reach the states outside it);
one after another they run the same steps in the same time, in the block they are in.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from switchyard.compile.shape.tree import Leaf, Node, Seq, par, seq, steps_of


def serialize_exclusive(
    node: Node,
    after: Mapping[str, list[str]],
    routers: Set[str],
    order: Mapping[str, int],
) -> Node:
    """`node` with the branches of every parallel block that wait on the same router put in
    one branch, one after another (a block left with one branch is no longer parallel).

    `after`: every step's dependencies (with those of the fallbacks compiled in its place);
    `routers`: the router steps; `order`: each step's position in the file, which orders
    branches."""
    if isinstance(node, Leaf):
        return node
    items = [serialize_exclusive(item, after, routers, order) for item in node.items]
    if isinstance(node, Seq):
        joined = seq(items)
        assert joined is not None
        return joined
    groups: dict[str | None, list[Node]] = {}
    loose: list[Node] = []
    for item in items:
        router = gating_router(item, after, routers)
        if router is None:
            loose.append(item)
        else:
            groups.setdefault(router, []).append(item)
    for group in groups.values():
        ordered = sorted(group, key=lambda item: _first(item, order))
        joined = seq(ordered)
        assert joined is not None
        loose.append(joined)
    result = par(loose, dict(order))
    assert result is not None
    return result


def gating_router(item: Node, after: Mapping[str, list[str]], routers: Set[str]) -> str | None:
    """The router every step of `item` waits on, when each of its dependencies is either that
    router or a step of `item`; None otherwise (a step of `item` could run whatever the router
    chose)."""
    inside = set(steps_of(item))
    found: set[str] = set()
    for step in inside:
        deps = after[step]
        if not deps:
            return None
        for dep in deps:
            if dep in inside:
                continue
            if dep not in routers:
                return None
            found.add(dep)
    return found.pop() if len(found) == 1 else None


def _first(node: Node, order: Mapping[str, int]) -> int:
    return min(order[step] for step in steps_of(node))
