// The graph's layout: dagre, left to right. Positions are top-left corners, as React Flow wants.
import dagre from "@dagrejs/dagre";

export type Positions = Record<string, { x: number; y: number }>;

export function layoutGraph(
  nodes: { id: string; after: string[] }[],
  width: number,
  height: number,
): Positions {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 56 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) g.setNode(node.id, { width, height });
  for (const node of nodes) for (const dep of node.after) g.setEdge(dep, node.id);
  dagre.layout(g);
  const positions: Positions = {};
  for (const node of nodes) {
    const placed = g.node(node.id);
    positions[node.id] = { x: (placed?.x ?? 0) - width / 2, y: (placed?.y ?? 0) - height / 2 };
  }
  return positions;
}
