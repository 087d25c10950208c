// The layout of a large graph off the page's thread: 1,000 steps take dagre over a second, which
// on the main thread would freeze the page.
import { layoutGraph, type Positions } from "./layout";

export type LayoutRequest = { id: number; nodes: { id: string; after: string[] }[]; width: number; height: number };
export type LayoutAnswer = { id: number; positions: Positions };

self.onmessage = (message: MessageEvent<LayoutRequest>) => {
  const { id, nodes, width, height } = message.data;
  const answer: LayoutAnswer = { id, positions: layoutGraph(nodes, width, height) };
  (self as unknown as Worker).postMessage(answer);
};
