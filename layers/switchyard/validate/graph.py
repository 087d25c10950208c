"""The step graph: cycles, reachability, and which steps are upstream of which.

Edges run from each step in `after` to the step that lists it. A fallback step has no `after`; it
stands in for the step it backs up, so it sees what that step sees.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GraphVerdict:
    cycles: list[list[str]]
    """One cycle per strongly connected component, in dependency order, first step first."""
    on_cycle: frozenset[str]
    unreachable: frozenset[str]
    """Steps that can never start: not on a cycle, but downstream of one."""


def analyse(after: Mapping[str, Sequence[str]]) -> GraphVerdict:
    """Cycles and unreachable steps of the graph whose edges are `after[step] -> step`.

    Unknown ids in `after` are ignored (they are reported elsewhere). A step is unreachable when
    it can never start because a step it depends on, directly or not, is on a cycle.
    """
    nodes = list(after)
    known = set(nodes)
    deps = {n: [d for d in after[n] if d in known] for n in nodes}
    components = _strongly_connected(nodes, deps)
    cycles: list[list[str]] = []
    on_cycle: set[str] = set()
    for component in components:
        if len(component) > 1 or component[0] in deps[component[0]]:
            members = set(component)
            on_cycle |= members
            cycles.append(_cycle_through(min(component, key=nodes.index), deps, members))
    reachable = _startable(nodes, deps)
    unreachable = frozenset(n for n in nodes if n not in reachable and n not in on_cycle)
    return GraphVerdict(cycles, frozenset(on_cycle), unreachable)


def _startable(nodes: list[str], deps: dict[str, list[str]]) -> set[str]:
    """Steps that can run: every dependency can run. A plain DAG walk, in Kahn's order."""
    waiting = {n: len(set(deps[n])) for n in nodes}
    dependents: dict[str, list[str]] = {n: [] for n in nodes}
    for n in nodes:
        for d in set(deps[n]):
            dependents[d].append(n)
    ready = [n for n in nodes if waiting[n] == 0]
    reached: set[str] = set()
    while ready:
        node = ready.pop()
        reached.add(node)
        for child in dependents[node]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return reached


def _strongly_connected(nodes: list[str], deps: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a 1,000-step chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_i = work.pop()
            if child_i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = deps[node]
            advanced = False
            while child_i < len(children):
                child = children[child_i]
                child_i += 1
                if child not in index:
                    work.append((node, child_i))
                    work.append((child, 0))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            if work and work[-1][0] != node:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _cycle_through(start: str, deps: dict[str, list[str]], members: set[str]) -> list[str]:
    """A shortest cycle through `start` inside its component, in execution order."""
    # Breadth-first over dependents (reverse of deps) from start back to start.
    dependents: dict[str, list[str]] = {m: [] for m in members}
    for m in members:
        for d in deps[m]:
            if d in members:
                dependents[d].append(m)
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in dependents[node]:
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return list(reversed(path))
                if child not in seen:
                    seen.add(child)
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [start]  # pragma: no cover - start is on a cycle by construction


def topological_order(after: Mapping[str, Sequence[str]]) -> list[str]:
    """Steps in an order where dependencies come first; file order breaks ties."""
    nodes = list(after)
    position = {n: i for i, n in enumerate(nodes)}
    waiting = {n: len({d for d in after[n] if d in position}) for n in nodes}
    dependents: dict[str, list[str]] = {n: [] for n in nodes}
    for n in nodes:
        for d in {d for d in after[n] if d in position}:
            dependents[d].append(n)
    ready = [(position[n], n) for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, node = heapq.heappop(ready)
        order.append(node)
        for child in dependents[node]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, (position[child], child))
    return order


class Upstream:
    """Which steps are upstream of which, as one bit mask per step (fast for 1,000 steps)."""

    __slots__ = ("_after", "_bit", "_masks")

    def __init__(self, after: Mapping[str, Sequence[str]]) -> None:
        self._after = after
        order = topological_order(after)
        ordered = set(order)
        # Steps on or after a cycle have no topological place; they go last, in file order.
        order += [n for n in after if n not in ordered]
        self._bit = {n: 1 << i for i, n in enumerate(order)}
        self._masks: dict[str, int] = {}
        for node in order:
            if node in ordered:
                self._masks[node] = self._mask_from_deps(node)
        for node in order:
            if node not in ordered:
                self._masks[node] = self._mask_by_search(node)

    def _mask_from_deps(self, node: str) -> int:
        mask = 0
        for dep in self._after[node]:
            if dep in self._bit:
                mask |= self._masks.get(dep, 0) | self._bit[dep]
        return mask

    def _mask_by_search(self, node: str) -> int:
        mask = 0
        pending = list(self._after[node])
        while pending:
            dep = pending.pop()
            bit = self._bit.get(dep)
            if bit is None or mask & bit:
                continue
            mask |= bit
            pending.extend(self._after[dep])
        return mask

    def is_upstream(self, candidate: str, of: str) -> bool:
        """True when `candidate` always finishes before `of` starts."""
        bit = self._bit.get(candidate)
        return bit is not None and bool(self._masks.get(of, 0) & bit)
