"""`max_parallel`: at most that many steps of one run at once.

The width of a tree is how many steps can run at the same time (a sequence: its widest part; a
parallel block: the sum of its branches). Where a block is wider than allowed, its branches run in
consecutive batches that each fit.
"""

from __future__ import annotations

from collections.abc import Callable

from switchyard.compile.shape.tree import Leaf, Node, Par, Seq, steps_of


def width(node: Node, leaf_width: Callable[[str], int]) -> int:
    if isinstance(node, Leaf):
        return leaf_width(node.step)
    if isinstance(node, Seq):
        return max(width(item, leaf_width) for item in node.items)
    return sum(width(item, leaf_width) for item in node.items)


def limit_width(
    node: Node, cap: int, leaf_width: Callable[[str], int]
) -> tuple[Node, list[list[str]]]:
    """The tree with no block wider than `cap`, and the batches it had to introduce."""
    batches: list[list[str]] = []
    return _limit(node, cap, leaf_width, batches), batches


def _limit(
    node: Node, cap: int, leaf_width: Callable[[str], int], batches: list[list[str]]
) -> Node:
    if isinstance(node, Leaf):
        return node
    items = tuple(_limit(item, cap, leaf_width, batches) for item in node.items)
    if isinstance(node, Seq):
        return Seq(items)
    if sum(width(item, leaf_width) for item in items) <= cap:
        return Par(items)
    groups: list[list[Node]] = [[]]
    used = 0
    for item in items:
        size = min(width(item, leaf_width), cap)
        if groups[-1] and used + size > cap:
            groups.append([])
            used = 0
        groups[-1].append(item)
        used += size
    for group in groups:
        batches.append([step for item in group for step in steps_of(item)])
    return Seq(tuple(group[0] if len(group) == 1 else Par(tuple(group)) for group in groups))
