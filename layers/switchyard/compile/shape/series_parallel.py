"""Series-parallel decomposition of a step DAG, adding the fewest synchronisation edges needed.

Step Functions nests `Parallel` states, so it expresses exactly the series-parallel orders: a set
of steps is either one step, independent parts side by side (a `Par`: no step of one part is
ordered with a step of another), or parts one after another (a `Seq`: every step of a part comes
before every step of the next). The recursion below finds those splits on the DAG's transitive
closure (one bit mask per step, so a 1,000-step workflow stays fast).

A set of steps with neither split is not series-parallel (the smallest is the "N": a->c, a->d,
b->d). There we add dependencies — "c also waits for b" — as few as we can: every single edge and
every pair of edges among the unordered steps of that part is tried, and where none works (or
there are too many to try) the part is cut in two at the point of its topological order that needs
the fewest edges. Among equally few edges, the one that keeps the longest chain of steps shortest
wins. No step is ever duplicated; an added edge only delays a step.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from switchyard.compile.shape.tree import Leaf, Node, Par, Seq, steps_of

_MAX_TRIALS = 2000
_EXACT_SEARCH_MAX_STEPS = 24
"""Prime parts larger than this are cut without the exact search (it grows as n^4)."""


@dataclass(frozen=True)
class SyncEdge:
    """An added dependency: `step` starts only after `waits_for` has finished."""

    waits_for: str
    step: str

    def describe(self) -> str:
        return f"'{self.step}' also waits for '{self.waits_for}'"


def decompose(
    after: Mapping[str, Sequence[str]], order: Sequence[str]
) -> tuple[Node | None, list[SyncEdge]]:
    """The series-parallel tree of the DAG `after` (step -> dependencies), and the added edges.

    `order` is the file order of the steps; it decides the order of parallel branches, so that
    compiling the same file twice gives the same machine.
    """
    if not order:
        return None, []
    order_dag = _Order(after, order)
    tree = order_dag.decompose(order_dag.everything)
    return tree, [SyncEdge(order[u], order[v]) for u, v in order_dag.added]


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Order:
    """A DAG as bit masks over step indexes: direct predecessors, ancestors, descendants."""

    def __init__(self, after: Mapping[str, Sequence[str]], order: Sequence[str]) -> None:
        self.names = list(order)
        index = {name: i for i, name in enumerate(order)}
        size = len(order)
        self.everything = (1 << size) - 1
        self.preds = [0] * size
        for name in order:
            for dep in after[name]:
                self.preds[index[name]] |= 1 << index[dep]
        self.topo = self._topological()
        self.topo_position = {i: p for p, i in enumerate(self.topo)}
        self.anc = [0] * size
        for i in self.topo:
            for p in _bits(self.preds[i]):
                self.anc[i] |= self.anc[p] | (1 << p)
        self.desc = [0] * size
        for i in reversed(self.topo):
            for p in _bits(self.preds[i]):
                self.desc[p] |= self.desc[i] | (1 << i)
        self.added: list[tuple[int, int]] = []

    def _topological(self) -> list[int]:
        """Kahn's algorithm; ties broken by file order, so the result is stable."""
        size = len(self.names)
        waiting = [p.bit_count() for p in self.preds]
        dependents: list[list[int]] = [[] for _ in range(size)]
        for i in range(size):
            for p in _bits(self.preds[i]):
                dependents[p].append(i)
        ready = [i for i in range(size) if waiting[i] == 0]
        heapq.heapify(ready)
        result: list[int] = []
        while ready:
            i = heapq.heappop(ready)
            result.append(i)
            for child in dependents[i]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(ready, child)
        if len(result) != size:
            raise ValueError("the steps have a dependency cycle; validate the workflow first")
        return result

    # --- decomposition ---------------------------------------------------------------------

    def decompose(self, mask: int) -> Node:
        while True:
            node = self._split(mask)
            if node is not None:
                return node
            self._complete(mask)

    def _split(self, mask: int, *, build: bool = True) -> Node | None:
        """One level of the tree for `mask`, recursing into its parts; None if not SP."""
        members = list(_bits(mask))
        if len(members) == 1:
            return Leaf(self.names[members[0]])
        parts = self._components(mask)
        if len(parts) > 1:
            kind: type[Par] | type[Seq] = Par
        else:
            parts = self._series_parts(mask)
            if len(parts) < 2:
                return None
            kind = Seq
        children: list[Node] = []
        for part in parts:
            child = self.decompose(part) if build else self._split(part, build=False)
            if child is None:
                return None
            children.append(child)
        if kind is Par:
            children.sort(key=_first_position(self.names))
        return kind(tuple(children))

    def _components(self, mask: int) -> list[int]:
        """Parts of `mask` with no order between them (components of the comparability graph)."""
        parts: list[int] = []
        remaining = mask
        while remaining:
            start = remaining & -remaining
            part = start
            frontier = start
            while frontier:
                grown = 0
                for i in _bits(frontier):
                    grown |= (self.desc[i] | self.anc[i]) & mask
                frontier = grown & ~part
                part |= grown
            parts.append(part)
            remaining &= ~part
        parts.sort(key=lambda p: min(self.topo_position[i] for i in _bits(p)))
        return parts

    def _series_parts(self, mask: int) -> list[int]:
        """Cuts of `mask` where everything before comes before everything after."""
        parts: list[int] = []
        prefix = 0
        below_all = mask
        start = 0
        ordered = [i for i in self.topo if mask >> i & 1]
        for position, i in enumerate(ordered[:-1]):
            prefix |= 1 << i
            below_all &= self.desc[i]
            rest = mask & ~prefix
            if rest & ~below_all == 0:
                part = 0
                for j in ordered[start : position + 1]:
                    part |= 1 << j
                parts.append(part)
                start = position + 1
        if parts:
            last = 0
            for j in ordered[start:]:
                last |= 1 << j
            parts.append(last)
        return parts

    # --- making a part series-parallel -----------------------------------------------------

    def _complete(self, mask: int) -> None:
        """Add the fewest edges that make `mask` decomposable one more level, then peel: any
        series part left that still cannot be split is cut too, in a loop rather than by
        recursion (a 1,000-step layered DAG would otherwise recurse once per layer)."""
        self._complete_once(mask)
        pending = [p for p in self._series_parts(mask) if not self._splits(p)]
        while pending:
            part = pending.pop()
            self._add_edges(self._cheapest_cut(part))
            pending += [p for p in self._series_parts(part) if not self._splits(p)]

    def _splits(self, mask: int) -> bool:
        """True when `mask` has a split at its own level (not looking deeper)."""
        return (
            mask & (mask - 1) == 0
            or len(self._components(mask)) > 1
            or len(self._series_parts(mask)) > 1
        )

    def _add_edges(self, edges: list[tuple[int, int]]) -> None:
        for u, v in edges:
            self._add_edge(u, v)

    def _complete_once(self, mask: int) -> None:
        """Add the fewest edges that make `mask` decomposable one more level (at least)."""
        members = [i for i in self.topo if mask >> i & 1]
        if len(members) > _EXACT_SEARCH_MAX_STEPS:
            self._add_edges(self._cheapest_cut(mask))
            return
        unordered = [
            (u, v)
            for u, v in itertools.permutations(members, 2)
            if not (self.desc[u] >> v & 1) and not (self.desc[v] >> u & 1)
        ]
        best: tuple[int, int, list[tuple[int, int]]] | None = None
        for size in (1, 2):
            if math.comb(len(unordered), size) > _MAX_TRIALS:
                break
            for combo in itertools.combinations(unordered, size):
                if self._works(mask, list(combo)):
                    chain = self._longest_chain_with(list(combo))
                    score = (size, chain, list(combo))
                    if best is None or score[:2] < best[:2]:
                        best = score
            if best is not None:
                break
        cut = self._cheapest_cut(mask)
        if best is None or len(cut) < best[0]:
            best = (len(cut), 0, cut)
        self._add_edges(best[2])

    def _works(self, mask: int, edges: list[tuple[int, int]]) -> bool:
        saved = (list(self.anc), list(self.desc), list(self.preds), self.topo, self.topo_position)
        try:
            for u, v in edges:
                if self.desc[v] >> u & 1 or u == v:
                    return False  # this set of edges would make a cycle
                self._add_edge(u, v, record=False)
            return self._split(mask, build=False) is not None
        finally:
            self.anc, self.desc, self.preds, self.topo, self.topo_position = saved

    def _cheapest_cut(self, mask: int) -> list[tuple[int, int]]:
        """Edges that order a prefix (in topological order) before the rest, fewest first."""
        ordered = [i for i in self.topo if mask >> i & 1]
        best: list[tuple[int, int]] | None = None
        prefix = 0
        for i in ordered[:-1]:
            prefix |= 1 << i
            rest = mask & ~prefix
            tops = [u for u in _bits(prefix) if self.desc[u] & prefix == 0]
            bottoms = [v for v in _bits(rest) if self.anc[v] & rest == 0]
            needed = [(u, v) for u in tops for v in bottoms if not self.desc[u] >> v & 1]
            if needed and (best is None or len(needed) < len(best)):
                best = needed
        assert best is not None, "a part that is not series-parallel has an unordered pair"
        return best

    def _add_edge(self, u: int, v: int, *, record: bool = True) -> None:
        self.preds[v] |= 1 << u
        above = self.anc[u] | (1 << u)
        below = self.desc[v] | (1 << v)
        for x in _bits(above):
            self.desc[x] |= below
        for y in _bits(below):
            self.anc[y] |= above
        self.topo = self._topological()
        self.topo_position = {i: p for p, i in enumerate(self.topo)}
        if record:
            self.added.append((u, v))

    def _longest_chain_with(self, edges: list[tuple[int, int]]) -> int:
        extra: dict[int, int] = {}
        for u, v in edges:
            extra[v] = extra.get(v, 0) | (1 << u)
        depth = [0] * len(self.names)
        for i in self._topological_with(extra):
            preds = self.preds[i] | extra.get(i, 0)
            depth[i] = 1 + max((depth[p] for p in _bits(preds)), default=0)
        return max(depth, default=0)

    def _topological_with(self, extra: dict[int, int]) -> list[int]:
        if not extra:
            return self.topo
        saved = self.preds
        self.preds = [p | extra.get(i, 0) for i, p in enumerate(saved)]
        try:
            return self._topological()
        finally:
            self.preds = saved


def _first_position(names: list[str]) -> Callable[[Node], int]:
    position = {name: i for i, name in enumerate(names)}

    def key(node: Node) -> int:
        return min(position[step] for step in steps_of(node))

    return key
