// The dashboard's data API (/api/dashboard on the same origin): typed reads and the gate
// decision. Errors carry the server's message, which says what to do. On AWS every request
// carries the signed-in person's token (auth.ts); a refused one signs in again.

import { freshAuthHeaders, refused } from "./auth";

export const API = "/api/dashboard";

export type Tokens = { input: number; output: number; cache_read?: number };
export type GateRef = { step: string; kind: string; assignee: string | null };

export type RunRow = {
  run_id: string;
  workflow: string;
  version: number | null;
  tenant: string;
  status: string;
  cost_usd: number;
  tokens: Tokens;
  started_at: string;
  ended_at: string | null;
  waiting_on: GateRef[];
  child: boolean;
  stuck: Stuck | null;
};

/** A stuck run (docs/runbooks.md#stuck-runs): since when, and on what it waits. */
export type Stuck = {
  last_transition_at: string;
  idle_seconds: number;
  waiting_on: { kind: string; state: string | null; step: string | null; run_id: string | null }[];
};

export type RunsPage = { runs: RunRow[]; next: string | null };

export type Step = {
  status: string;
  attempts: number;
  model: string | null;
  provider: string | null;
  cost_usd: number;
  tokens: Tokens;
  started_at: string | null;
  ended_at: string | null;
  error: { type?: string; message?: string; cause?: unknown } | null;
  output: unknown;
  output_bytes: number | null;
  items: { total: number; completed: number; failed: number } | null;
  children: { run_id: string; status: string }[];
  replayed_from: string | null;
};

export type GraphNode = {
  id: string;
  kind: string;
  after: string[];
  model: string | null;
  detail: string | null;
};

export type Gate = {
  id: string;
  step: string;
  kind: string;
  tier: number;
  assignee: string | null;
  message: string | null;
  show: Record<string, unknown> | null;
  allow_edit: boolean;
  request: unknown;
  deadline: string | null;
  opened_at: string | null;
};

export type Budget = { kind: string; limit: number; used: number; left: number };
export type TimelineEvent = {
  id: number;
  type: string;
  at: string;
  state: string | null;
  error: string | null;
};

export type Segment = {
  run_id: string;
  segment: number;
  continued_from: string | null;
  status: string;
  cost_usd: number;
  input_tokens: number;
  output_tokens: number;
  started_at: string;
  ended_at: string | null;
  execution_arn: string;
};

export type RunDetail = RunRow & {
  execution_arn: string;
  parent_run_id: string | null;
  error: { type?: string; message?: string; step?: string } | null;
  input: unknown;
  input_bytes: number | null;
  output: unknown;
  output_bytes: number | null;
  steps: Record<string, Step>;
  graph: GraphNode[];
  budgets: Budget[];
  gates: Gate[];
  timeline: { events: TimelineEvent[]; total: number };
  /** The executions of a run that continued as new, oldest first; null for a single one. */
  segments: Segment[] | null;
};

export type WorkflowSummary = {
  name: string;
  version: number | null;
  runs: number;
  succeeded: number;
  failed: number;
  open: number;
  success_rate: number | null;
  cost_usd: number;
  last_started: string | null;
};

export type DayCost = { day: string; key: string; cost_usd: number; runs: number };

export type WorkflowDetail = {
  name: string;
  days: number;
  versions: { version: number | null; runs: number; first_started: string; last_started: string }[];
  graph: GraphNode[];
  runs: number;
  succeeded: number;
  failed: number;
  success_rate: number | null;
  p50_seconds: number | null;
  p95_seconds: number | null;
  cost_usd: number;
  cost_per_day: DayCost[];
  recent: RunRow[];
};

export type KeyCost = { key: string; cost_usd: number; runs?: number; tokens: Tokens };
export type Costs = {
  days: number;
  by_workflow: KeyCost[];
  by_tenant: KeyCost[];
  by_model: KeyCost[];
  by_day: DayCost[];
  budget_pauses: {
    run_id: string;
    workflow: string;
    step: string;
    status: string;
    opened_at: string;
    decided_at: string | null;
    reviewer: string | null;
  }[];
};

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    public code: string,
  ) {
    super(message);
  }
}

async function failure(response: Response): Promise<ApiError> {
  if (response.status === 401 && refused()) {
    return new ApiError(401, "Signing in again…", "unauthorized");
  }
  let message = `${response.status} ${response.statusText}`;
  let code = "error";
  try {
    const body = await response.json();
    if (body?.error?.message) {
      message = body.error.message;
      code = body.error.code ?? code;
    } else if (typeof body?.detail === "string") {
      message = body.detail;
    } else if (typeof body?.message === "string") {
      message = body.message; // API Gateway's own answers ({"message": "Unauthorized"})
    }
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(response.status, message, code);
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(API + path, {
    signal,
    credentials: "same-origin",
    headers: await freshAuthHeaders(),
  });
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

export async function getText(path: string): Promise<{ text: string; bytes: number }> {
  const response = await fetch(API + path, { credentials: "same-origin", headers: await freshAuthHeaders() });
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  return { text, bytes: Number(response.headers.get("X-Switchyard-Bytes") ?? text.length) };
}

export async function decideGate(
  runId: string,
  step: string,
  action: "approve" | "reject",
  reviewer: string,
  note: string,
): Promise<void> {
  const response = await fetch(
    `${API}/runs/${encodeURIComponent(runId)}/steps/${encodeURIComponent(step)}/${action}`,
    {
      method: "POST",
      credentials: "same-origin",
      // on AWS the signed-in person decides, whatever this header says
      headers: { ...(await freshAuthHeaders()), "Content-Type": "application/json", "X-Switchyard-User": reviewer },
      body: JSON.stringify(note ? { note } : {}),
    },
  );
  if (!response.ok) throw await failure(response);
}

export function setToken(token: string): void {
  document.cookie = `switchyard_token=${token.replace(/[;\s]/g, "")}; path=/; SameSite=Strict`;
}
