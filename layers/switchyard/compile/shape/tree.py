"""Series-parallel trees: a workflow's steps as sequences (`Seq`) of parallel blocks (`Par`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Leaf:
    step: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Par:
    items: tuple[Node, ...]


Node = Leaf | Seq | Par


def steps_of(node: Node) -> Iterator[str]:
    if isinstance(node, Leaf):
        yield node.step
    else:
        for item in node.items:
            yield from steps_of(item)


def seq(items: list[Node]) -> Node | None:
    """A sequence, flattened; None when empty, the item itself when alone."""
    flat: list[Node] = []
    for item in items:
        flat.extend(item.items if isinstance(item, Seq) else (item,))
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def par(items: list[Node], order: dict[str, int]) -> Node | None:
    """A parallel block, flattened and ordered by each branch's first step in the file."""
    flat: list[Node] = []
    for item in items:
        flat.extend(item.items if isinstance(item, Par) else (item,))
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    flat.sort(key=lambda node: min(order[s] for s in steps_of(node)))
    return Par(tuple(flat))
