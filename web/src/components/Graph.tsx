// A workflow's DAG, laid out by dagre (left to right) and drawn by React Flow; each node takes
// its step's live status as colour. Shared by the run and workflow pages (and, later, the
// builder). Large graphs render only what is in view.
import dagre from "@dagrejs/dagre";
import { Background, Controls, MiniMap, ReactFlow, type Edge, type Node } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { useMemo } from "react";
import type { GraphNode, Step } from "../api";
import { usd } from "../format";

const WIDTH = 180;
const HEIGHT = 56;

export const STATUS_COLOURS: Record<string, string> = {
  pending: "#e5e7eb",
  running: "#bfdbfe",
  waiting: "#fde68a",
  paused: "#fed7aa",
  completed: "#bbf7d0",
  succeeded: "#bbf7d0",
  failed: "#fecaca",
  skipped: "#f3f4f6",
  cancelled: "#e5e7eb",
  timed_out: "#fecaca",
};

function layout(graph: GraphNode[]): Map<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 56 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph) g.setNode(node.id, { width: WIDTH, height: HEIGHT });
  for (const node of graph) for (const dep of node.after) g.setEdge(dep, node.id);
  dagre.layout(g);
  const out = new Map<string, { x: number; y: number }>();
  for (const node of graph) {
    const placed = g.node(node.id);
    out.set(node.id, { x: (placed?.x ?? 0) - WIDTH / 2, y: (placed?.y ?? 0) - HEIGHT / 2 });
  }
  return out;
}

export default function Graph({
  graph,
  steps,
  onSelect,
}: {
  graph: GraphNode[];
  steps?: Record<string, Step>;
  onSelect?: (step: string) => void;
}) {
  // the layout depends on the shape only, not on the statuses: recomputed when the shape changes
  const shape = graph.map((n) => `${n.id}<${n.after.join(",")}`).join(";");
  const positions = useMemo(() => layout(graph), [shape]); // eslint-disable-line react-hooks/exhaustive-deps
  const nodes: Node[] = graph.map((node) => {
    const step = steps?.[node.id];
    const status = step?.status ?? (steps ? "pending" : "");
    return {
      id: node.id,
      position: positions.get(node.id) ?? { x: 0, y: 0 },
      data: {
        label: (
          <div className="node" data-node={node.id} data-node-status={status}>
            <strong>{node.id}</strong>
            <span className="muted">
              {node.kind}
              {step ? ` · ${status}` : ""}
              {step && step.cost_usd > 0 ? ` · ${usd(step.cost_usd)}` : ""}
            </span>
          </div>
        ),
      },
      style: {
        width: WIDTH,
        height: HEIGHT,
        padding: 4,
        background: STATUS_COLOURS[status] ?? "#ffffff",
        border: "1px solid #9ca3af",
        borderRadius: 6,
        fontSize: 12,
      },
      sourcePosition: "right" as Node["sourcePosition"],
      targetPosition: "left" as Node["targetPosition"],
      draggable: false,
      connectable: false,
    };
  });
  const edges: Edge[] = graph.flatMap((node) =>
    node.after.map((dep) => ({
      id: `${dep}->${node.id}`,
      source: dep,
      target: node.id,
      animated: steps?.[node.id]?.status === "running",
    })),
  );
  return (
    <div className="graph">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        fitView
        minZoom={0.05}
        onlyRenderVisibleElements={graph.length > 100}
        nodesDraggable={false}
        nodesConnectable={false}
        proOptions={{ hideAttribution: true }}
        onNodeClick={(_, node) => onSelect?.(node.id)}
      >
        <Background />
        <Controls showInteractive={false} />
        {graph.length > 30 && <MiniMap pannable zoomable />}
      </ReactFlow>
    </div>
  );
}
