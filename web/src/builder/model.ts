// The workflow document as the builder edits it (plain data, as YAML gives it) and the edits a
// canvas makes: steps added from the palette, edges as `after` lists (and routers' routes),
// renames and deletions. Every edit returns a new document; the YAML is written by the server's
// round trip, so keys the builder does not touch keep their place and formatting.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type StepData = { [key: string]: Json };
export type Doc = { [key: string]: Json } & { steps?: { [id: string]: StepData } };

export const STEP_TYPES = [
  "agent",
  "tool",
  "router",
  "human_gate",
  "sub_workflow",
  "map",
  "loop",
] as const;
export type StepType = (typeof STEP_TYPES)[number];
export const ROUTER_KINDS = ["rule", "score", "llm"] as const;
/** switchyard.model.builtin_tools */
export const BUILTIN_TOOLS = [
  "http.request",
  "sql.query",
  "s3.get",
  "s3.put",
  "sqs.send",
  "sns.publish",
  "events.put",
  "email.send",
  "slack.post",
];

export function emptyDoc(): Doc {
  return { switchyard: 1, name: "new-workflow", version: 1, steps: {} };
}

export function steps(doc: Doc): { [id: string]: StepData } {
  const value = doc.steps;
  return value && typeof value === "object" && !Array.isArray(value) ? value : {};
}

export function afterOf(step: StepData): string[] {
  return Array.isArray(step.after) ? step.after.filter((x): x is string => typeof x === "string") : [];
}

/** A new step of `type` (`variant`: the built-in tool, or the router's strategy). */
export function newStep(type: StepType, variant?: string): StepData {
  switch (type) {
    case "agent":
      return { type, prompt: "" };
    case "tool":
      return { type, tool: variant || BUILTIN_TOOLS[0] };
    case "router":
      if (variant === "score") return { type, strategy: "score", score: "", thresholds: [] };
      return { type, strategy: variant === "llm" ? "llm" : "rule", routes: [] };
    case "human_gate":
      return { type, assignee: "", message: "" };
    case "sub_workflow":
      return { type, workflow: "" };
    case "map":
      return { type, items: "", step: { type: "agent", prompt: "" } };
    case "loop":
      return { type, step: { type: "agent", prompt: "" }, max_iterations: 3 };
  }
}

export function freeId(doc: Doc, type: string): string {
  const taken = steps(doc);
  for (let n = 1; ; n++) if (!(`${type}_${n}` in taken)) return `${type}_${n}`;
}

function withSteps(doc: Doc, next: { [id: string]: StepData }): Doc {
  return { ...doc, steps: next };
}

export function addStep(doc: Doc, id: string, step: StepData): Doc {
  return withSteps(doc, { ...steps(doc), [id]: step });
}

export function setStep(doc: Doc, id: string, step: StepData): Doc {
  return withSteps(doc, { ...steps(doc), [id]: step });
}

function setAfter(step: StepData, after: string[]): StepData {
  const next = { ...step };
  if (after.length) next.after = after;
  else delete next.after;
  return next;
}

/** An edge `from -> to`: `to` runs after `from`; from a router, a route to `to` too. */
export function connect(doc: Doc, from: string, to: string): Doc {
  const all = steps(doc);
  const target = all[to];
  const source = all[from];
  if (!target || !source || from === to || afterOf(target).includes(from)) return doc;
  let next = setStep(doc, to, setAfter(target, [...afterOf(target), from]));
  if (source.type === "router" && !routesTo(source).includes(to)) {
    next = setStep(next, from, addRoute(source, to));
  }
  return next;
}

function routesTo(router: StepData): string[] {
  const found: string[] = [];
  for (const key of ["routes", "thresholds"]) {
    const list = router[key];
    if (Array.isArray(list))
      for (const route of list)
        if (route && typeof route === "object" && !Array.isArray(route) && typeof route.to === "string")
          found.push(route.to);
  }
  if (typeof router.default === "string") found.push(router.default);
  return found;
}

function addRoute(router: StepData, to: string): StepData {
  if (router.strategy === "score") {
    const list = Array.isArray(router.thresholds) ? router.thresholds : [];
    return { ...router, thresholds: [...list, { min: 0, to }] };
  }
  const list = Array.isArray(router.routes) ? router.routes : [];
  const route: Json = router.strategy === "llm" ? { to, description: "" } : { when: "", to };
  return { ...router, routes: [...list, route] };
}

function dropRoutes(router: StepData, to: string): StepData {
  const next = { ...router };
  for (const key of ["routes", "thresholds"]) {
    const list = next[key];
    if (Array.isArray(list))
      next[key] = list.filter(
        (r) => !(r && typeof r === "object" && !Array.isArray(r) && r.to === to),
      );
  }
  if (next.default === to) delete next.default;
  return next;
}

export function disconnect(doc: Doc, from: string, to: string): Doc {
  const all = steps(doc);
  if (!all[to]) return doc;
  let next = setStep(doc, to, setAfter(all[to], afterOf(all[to]).filter((d) => d !== from)));
  const source = steps(next)[from];
  if (source?.type === "router") next = setStep(next, from, dropRoutes(source, to));
  return next;
}

export function removeStep(doc: Doc, id: string): Doc {
  const next: { [id: string]: StepData } = {};
  for (const [key, step] of Object.entries(steps(doc))) {
    if (key === id) continue;
    let changed = afterOf(step).includes(id) ? setAfter(step, afterOf(step).filter((d) => d !== id)) : step;
    if (changed.type === "router") changed = dropRoutes(changed, id);
    next[key] = changed;
  }
  return withSteps(doc, next);
}

function renameIn(value: Json, from: string, to: string, keys: string[]): Json {
  if (Array.isArray(value)) return value.map((v) => renameIn(v, from, to, keys));
  if (value && typeof value === "object") {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value))
      out[k] = keys.includes(k) && v === from ? to : renameIn(v, from, to, keys);
    return out;
  }
  return value;
}

/** The step's id changed: `after` lists, routes and fallbacks follow (templates are not
 * rewritten: the validator points at those left). */
export function renameStep(doc: Doc, from: string, to: string): Doc {
  const all = steps(doc);
  if (!all[from] || from === to || to in all) return doc;
  const next: { [id: string]: StepData } = {};
  for (const [key, step] of Object.entries(all)) {
    let changed: StepData = {
      ...step,
      ...(Array.isArray(step.after) ? { after: afterOf(step).map((d) => (d === from ? to : d)) } : {}),
    };
    if (changed.type === "router")
      changed = renameIn(changed, from, to, ["to", "default"]) as StepData;
    if (changed.fallback === from) changed.fallback = to;
    next[key === from ? to : key] = changed;
  }
  return withSteps(doc, next);
}

/** Steps upstream of `id` (its `after`, transitively). */
export function upstream(doc: Doc, id: string): string[] {
  const all = steps(doc);
  const seen = new Set<string>();
  const queue = [...afterOf(all[id] ?? {})];
  while (queue.length) {
    const next = queue.shift()!;
    if (seen.has(next) || !all[next]) continue;
    seen.add(next);
    queue.push(...afterOf(all[next]));
  }
  return [...seen];
}
