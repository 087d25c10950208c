"""The shape of a workflow's DAG as nested sequences and parallel blocks."""

from switchyard.compile.shape.series_parallel import SyncEdge, decompose
from switchyard.compile.shape.tree import Leaf, Node, Par, Seq
from switchyard.compile.shape.width import limit_width

__all__ = ["Leaf", "Node", "Par", "Seq", "SyncEdge", "decompose", "limit_width"]
