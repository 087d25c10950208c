// The graph's layout (dagre, left to right) off the page's thread: 1,000 steps take dagre over a
// second, which on the main thread would freeze the page.
import dagre from "@dagrejs/dagre";

export type LayoutRequest = { id: number; nodes: { id: string; after: string[] }[]; width: number; height: number };
export type LayoutAnswer = { id: number; positions: Record<string, { x: number; y: number }> };

self.onmessage = (message: MessageEvent<LayoutRequest>) => {
  const { id, nodes, width, height } = message.data;
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 56 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) g.setNode(node.id, { width, height });
  for (const node of nodes) for (const dep of node.after) g.setEdge(dep, node.id);
  dagre.layout(g);
  const positions: LayoutAnswer["positions"] = {};
  for (const node of nodes) {
    const placed = g.node(node.id);
    positions[node.id] = { x: (placed?.x ?? 0) - width / 2, y: (placed?.y ?? 0) - height / 2 };
  }
  (self as unknown as Worker).postMessage({ id, positions } satisfies LayoutAnswer);
};
