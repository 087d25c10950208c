// The builder's calls to the REST API (same origin): a workflow file's source and ETag, the
// round-trip edit, the validator and compiler, save (If-Match) and install. The token the
// dashboard keeps in its cookie is sent as the Authorization header the REST API reads.
import { ApiError } from "../api";

export type Diagnostic = {
  code: string;
  path: string;
  line: number;
  message: string;
  severity: "error" | "warning" | "note";
};
export type Validation = { ok: boolean; diagnostics: Diagnostic[]; outputs: Record<string, Schema> };
export type Compiled = {
  ok: boolean;
  diagnostics: Diagnostic[];
  definition: unknown;
  notes: Diagnostic[];
};
export type Schema = { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema };
export type Loaded = { text: string; etag: string | null };

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const match = document.cookie.match(/(?:^|;\s*)switchyard_token=([^;]*)/);
  return match ? { ...extra, Authorization: `Bearer ${match[1]}` } : extra;
}

async function fail(response: Response): Promise<never> {
  let message = `${response.status} ${response.statusText}`;
  let code = "";
  try {
    const body = await response.json();
    message = body?.error?.message ?? message;
    code = body?.error?.code ?? "";
  } catch {
    // not JSON: the status says it
  }
  throw new ApiError(response.status, message, code);
}

export async function loadSource(name: string): Promise<Loaded> {
  const response = await fetch(`/workflows/${encodeURIComponent(name)}/source`, {
    headers: headers(),
    cache: "no-store",
  });
  if (!response.ok) await fail(response);
  return { text: await response.text(), etag: response.headers.get("ETag") };
}

async function post<T>(path: string, body: string, type: string): Promise<T> {
  const response = await fetch(path, {
    method: "POST",
    body,
    headers: headers({ "Content-Type": type }),
  });
  if (!response.ok) await fail(response);
  return (await response.json()) as T;
}

export async function applyDocument(source: string, doc: unknown): Promise<string> {
  const body = JSON.stringify({ source, document: doc });
  return (await post<{ source: string }>("/builder/apply", body, "application/json")).source;
}

export const validate = (text: string) => post<Validation>("/validate", text, "application/yaml");
export const compile = (text: string) => post<Compiled>("/compile", text, "application/yaml");

export async function saveSource(
  name: string,
  text: string,
  etag: string | null,
): Promise<{ etag: string; ok: boolean; diagnostics: Diagnostic[] }> {
  const extra: Record<string, string> = { "Content-Type": "application/yaml" };
  if (etag) extra["If-Match"] = etag;
  const response = await fetch(`/workflows/${encodeURIComponent(name)}/source`, {
    method: "PUT",
    body: text,
    headers: headers(extra),
  });
  if (!response.ok) await fail(response);
  return await response.json();
}

export async function installWorkflow(name: string): Promise<{ version: number; installed: boolean }> {
  return await post(`/workflows/${encodeURIComponent(name)}/install`, "", "application/json");
}
