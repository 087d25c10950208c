// A workflow's DAG, laid out by dagre (left to right) and drawn by React Flow; each node takes
// its step's live status as colour. Shared by the run and workflow pages (and, later, the
// builder). The layout runs in a worker; large graphs render only what is in view.
import { Background, Controls, MiniMap, ReactFlow, type Edge, type Node } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { useEffect, useMemo, useState } from "react";
import type { GraphNode, Step } from "../api";
import { usd } from "../format";
import { layoutGraph } from "./layout";
import type { LayoutAnswer, LayoutRequest } from "./layout.worker";

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

/** Graphs with more steps than this are laid out in a worker; smaller ones at once. */
const IN_WORKER = 100;
let nextRequest = 0;

type Layout = Map<string, { x: number; y: number }>;

/** Positions of the graph's nodes; null while a worker computes them. */
function useLayout(graph: GraphNode[]): Layout | null {
  const shape = graph.map((n) => `${n.id}<${n.after.join(",")}`).join(";");
  const small = graph.length <= IN_WORKER;
  const direct = useMemo(
    () => (small ? new Map(Object.entries(layoutGraph(graph, WIDTH, HEIGHT))) : null),
    [shape], // eslint-disable-line react-hooks/exhaustive-deps
  );
  const [computed, setComputed] = useState<{ shape: string; positions: Layout } | null>(null);
  useEffect(() => {
    if (small) return;
    const worker = new Worker(new URL("./layout.worker.ts", import.meta.url), { type: "module" });
    const id = ++nextRequest;
    worker.onmessage = (message: MessageEvent<LayoutAnswer>) => {
      if (message.data.id !== id) return;
      setComputed({ shape, positions: new Map(Object.entries(message.data.positions)) });
      worker.terminate();
    };
    const request: LayoutRequest = {
      id,
      nodes: graph.map((n) => ({ id: n.id, after: n.after })),
      width: WIDTH,
      height: HEIGHT,
    };
    worker.postMessage(request);
    return () => worker.terminate();
  }, [shape]); // eslint-disable-line react-hooks/exhaustive-deps
  if (direct) return direct;
  return computed && computed.shape === shape ? computed.positions : null;
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
  const positions = useLayout(graph);
  if (positions === null) {
    return (
      <div className="graph placeholder muted" data-graph="laying-out">
        Laying out {graph.length} steps…
      </div>
    );
  }
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
    <div className="graph" data-graph="drawn">
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
