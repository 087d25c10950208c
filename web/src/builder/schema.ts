// The property panel's fields, read from schema/workflow.schema.json (the schema the editor
// support uses): for a step type (and a router's strategy), its properties in the schema's
// terms, each as the kind of control that edits it.
import workflowSchema from "../../../schema/workflow.schema.json";

type S = { [key: string]: unknown };
export type FieldKind = "text" | "longtext" | "number" | "integer" | "boolean" | "enum" | "yaml";
export type Field = {
  key: string;
  kind: FieldKind;
  required: boolean;
  description: string;
  options: string[];
  template: boolean;
};

const root = workflowSchema as unknown as S;
const defs = (root.$defs ?? {}) as { [name: string]: S };
const LONG = new Set(["prompt", "message", "system", "description"]);
const TEMPLATE = new Set(["prompt", "message", "system", "items", "args", "show", "input"]);
const CONDITION = new Set(["when", "until", "score"]);
const HIDDEN = new Set(["type", "after", "strategy"]);

function resolve(schema: S): S {
  const ref = schema.$ref;
  if (typeof ref === "string") return resolve(defs[ref.split("/").pop()!] ?? {});
  const any = (schema.anyOf ?? schema.oneOf) as S[] | undefined;
  if (any) {
    const real = any.filter((s) => s.type !== "null");
    if (real.length === 1) return { ...resolve(real[0]), description: schema.description };
  }
  return schema;
}

function kindOf(key: string, schema: S): { kind: FieldKind; options: string[] } {
  const s = resolve(schema);
  const options = (s.enum ?? []) as string[];
  if (options.length && options.every((o) => typeof o === "string")) return { kind: "enum", options };
  if (s.type === "string") return { kind: LONG.has(key) ? "longtext" : "text", options: [] };
  if (s.type === "integer") return { kind: "integer", options: [] };
  if (s.type === "number") return { kind: "number", options: [] };
  if (s.type === "boolean") return { kind: "boolean", options: [] };
  return { kind: "yaml", options: [] };
}

function fieldsOf(def: S, hidden: Set<string>): Field[] {
  const properties = (def.properties ?? {}) as { [key: string]: S };
  const required = new Set((def.required ?? []) as string[]);
  const fields = Object.entries(properties)
    .filter(([key]) => !hidden.has(key))
    .map(([key, schema]) => {
      const { kind, options } = kindOf(key, schema);
      const resolved = resolve(schema);
      return {
        key,
        kind,
        options,
        required: required.has(key),
        description: String(schema.description ?? resolved.description ?? ""),
        template: TEMPLATE.has(key) || CONDITION.has(key),
      };
    });
  return [...fields.filter((f) => f.required), ...fields.filter((f) => !f.required)];
}

const STEP_DEFS: { [type: string]: string } = {
  agent: "AgentStep",
  tool: "ToolStep",
  human_gate: "HumanGateStep",
  sub_workflow: "SubWorkflowStep",
  map: "MapStep",
  loop: "LoopStep",
  "router:rule": "RuleRouter",
  "router:score": "ScoreRouter",
  "router:llm": "LlmRouter",
};

export function stepFields(type: string, strategy?: string): Field[] {
  const name = STEP_DEFS[type === "router" ? `router:${strategy ?? "rule"}` : type];
  return name && defs[name] ? fieldsOf(defs[name], HIDDEN) : [];
}

export function workflowFields(): Field[] {
  return fieldsOf(root, new Set(["steps", "switchyard"]));
}

export function stepDescription(type: string): string {
  const name = STEP_DEFS[type === "router" ? "router:rule" : type];
  return String(defs[name]?.description ?? "");
}
