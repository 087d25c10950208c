from __future__ import annotations

from switchyard.compile.shape import Leaf, Par, Seq, limit_width
from switchyard.compile.shape.width import width


def one(_: str) -> int:
    return 1


def test_a_block_within_the_cap_is_kept() -> None:
    tree = Par((Leaf("a"), Leaf("b")))
    assert limit_width(tree, 2, one) == (tree, [])


def test_a_wide_block_runs_in_batches_that_fit() -> None:
    tree = Par(tuple(Leaf(s) for s in "abcde"))
    limited, batches = limit_width(tree, 2, one)
    assert width(limited, one) == 2
    assert batches == [["a", "b"], ["c", "d"], ["e"]]
    assert limited == Seq((Par((Leaf("a"), Leaf("b"))), Par((Leaf("c"), Leaf("d"))), Leaf("e")))


def test_nested_blocks_are_limited_inside_out() -> None:
    tree = Par((Seq((Leaf("a"), Par((Leaf("b"), Leaf("c"), Leaf("d"))))), Leaf("e")))
    limited, _ = limit_width(tree, 2, one)
    assert width(limited, one) <= 2


def test_a_map_counts_its_concurrency() -> None:
    sizes = {"map": 3, "x": 1}
    tree = Par((Leaf("map"), Leaf("x")))
    limited, batches = limit_width(tree, 3, sizes.__getitem__)
    assert limited == Seq((Leaf("map"), Leaf("x")))
    assert batches == [["map"], ["x"]]
