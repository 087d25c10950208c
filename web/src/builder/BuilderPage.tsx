// The visual builder at /ui/builder (a new workflow) and /ui/builder/<name> (its file): a palette
// of step types dragged onto a React Flow canvas, edges as `after` lists, a property panel from
// the schema, live validation, the compiled state machine, save (the file's bytes kept where
// nothing changed) and install. A source that is not YAML opens as text with its diagnostics.
import {
  Background,
  BaseEdge,
  Controls,
  EdgeLabelRenderer,
  ReactFlow,
  ReactFlowProvider,
  getBezierPath,
  useReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type EdgeProps,
  type Node,
  type NodeChange,
} from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import "./builder.css";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useLocation, useNavigate, useParams } from "react-router-dom";
import YAML from "yaml";
import { Problem } from "../components/Layout";
import { layoutGraph } from "../components/layout";
import {
  applyDocument,
  compile,
  installWorkflow,
  loadSource,
  saveSource,
  validate,
  type Compiled,
  type Diagnostic,
  type Schema,
} from "./client";
import { useHistory } from "./history";
import {
  BUILTIN_TOOLS,
  ROUTER_KINDS,
  STEP_TYPES,
  addStep,
  afterOf,
  connect,
  disconnect,
  emptyDoc,
  freeId,
  newStep,
  removeStep,
  renameStep,
  setStep,
  steps,
  upstream,
  type Doc,
  type Json,
  type StepType,
} from "./model";
import { PropertyPanel } from "./PropertyPanel";
import { stepFields, workflowFields } from "./schema";

const WIDTH = 180;
const HEIGHT = 56;
const DRAG_TYPE = "application/x-switchyard-step";

type Positions = Record<string, { x: number; y: number }>;
type State = { doc: Doc; positions: Positions };
type Selection = { kind: "step"; id: string } | { kind: "edge"; from: string; to: string } | null;

/** The source as a document, or why it cannot be drawn (then it opens as text). */
function parse(text: string): { doc: Doc } | { error: string } {
  if (text.trim() === "") return { doc: emptyDoc() };
  const document = YAML.parseDocument(text, { uniqueKeys: true });
  if (document.errors.length) return { error: document.errors[0].message.split("\n")[0] };
  const value = document.toJS({ maxAliasCount: 100 }) as unknown;
  if (!value || typeof value !== "object" || Array.isArray(value))
    return { error: "the file is not a mapping of the workflow's fields" };
  const doc = value as Doc;
  if (doc.steps !== undefined && (typeof doc.steps !== "object" || Array.isArray(doc.steps)))
    return { error: "steps is not a mapping of step ids to steps" };
  return { doc };
}

function laidOut(doc: Doc): Positions {
  const nodes = Object.entries(steps(doc)).map(([id, step]) => ({
    id,
    after: afterOf(step).filter((d) => d in steps(doc)),
  }));
  return layoutGraph(nodes, WIDTH, HEIGHT);
}

function references(doc: Doc, id: string | null, outputs: Record<string, Schema>): string[] {
  const inputs = doc.inputs && typeof doc.inputs === "object" && !Array.isArray(doc.inputs) ? Object.keys(doc.inputs) : [];
  const found = inputs.map((name) => `inputs.${name}`);
  const walk = (prefix: string, schema: Schema | undefined, depth: number) => {
    found.push(prefix);
    if (!schema || depth > 2) return;
    for (const [key, child] of Object.entries(schema.properties ?? {})) walk(`${prefix}.${key}`, child, depth + 1);
  };
  for (const step of id ? upstream(doc, id) : Object.keys(steps(doc)))
    walk(`steps.${step}.output`, outputs[step], 0);
  return found;
}

function stepOfPath(path: string): string | null {
  const match = /^steps\.([a-z][a-z0-9_]*)/.exec(path);
  return match ? match[1] : null;
}

function BuilderEdge(props: EdgeProps) {
  const [path, x, y] = getBezierPath(props);
  const problems = (props.data?.problems ?? []) as Diagnostic[];
  const when = props.data?.when as string | undefined;
  return (
    <g data-edge={props.id} data-edge-error={problems.length ? problems[0].code : undefined}>
      <title>{problems.map((p) => p.message).join("\n")}</title>
      <BaseEdge
        id={props.id}
        path={path}
        style={{ stroke: problems.length ? "#dc2626" : props.selected ? "#2563eb" : "#9ca3af", strokeWidth: problems.length || props.selected ? 2.5 : 1.5 }}
      />
      {(when || problems.length > 0) && (
        <EdgeLabelRenderer>
          <div
            className={`edge-label${problems.length ? " error" : ""}`}
            title={problems.map((p) => p.message).join("\n")}
            style={{ transform: `translate(-50%, -50%) translate(${x}px,${y}px)` }}
          >
            {problems.length ? `⚠ ${problems[0].code}` : `when ${when}`}
          </div>
        </EdgeLabelRenderer>
      )}
    </g>
  );
}
const EDGE_TYPES = { builder: BuilderEdge };

export default function BuilderPage() {
  return (
    <ReactFlowProvider>
      <Builder key={useParams().name ?? ""} />
    </ReactFlowProvider>
  );
}

function Builder() {
  const { name } = useParams();
  const navigate = useNavigate();
  const flow = useReactFlow();
  const { history, commit, replace, undo, redo, reset } = useHistory<State>({ doc: emptyDoc(), positions: {} });
  const { doc, positions } = history.present;
  const [base, setBase] = useState<{ text: string; etag: string | null } | null>(name ? null : { text: "", etag: null });
  const [loadError, setLoadError] = useState<Error | null>(null);
  const [mode, setMode] = useState<"canvas" | "text">("canvas");
  const [text, setText] = useState("");
  const [textProblem, setTextProblem] = useState<string | null>(null);
  const [diagnostics, setDiagnostics] = useState<Diagnostic[]>([]);
  const [outputs, setOutputs] = useState<Record<string, Schema>>({});
  const [compiled, setCompiled] = useState<Compiled | null>(null);
  const [selection, setSelection] = useState<Selection>(null);
  const [tab, setTab] = useState<"properties" | "problems" | "compiled">("properties");
  const arrived = useLocation().state as { saved?: string } | null;
  const [status, setStatus] = useState<{ text: string; kind: "ok" | "error" | "busy" } | null>(
    arrived?.saved ? { text: arrived.saved, kind: "ok" } : null,
  );
  const [saved, setSaved] = useState(true);
  const [variant, setVariant] = useState<Record<string, string>>({ tool: BUILTIN_TOOLS[0], router: "rule" });
  const checked = useRef(0);
  // true from an edit until the validator has answered for it: the page never calls "valid" a
  // document it has not checked yet (edits within the debounce are checked together)
  const [checking, setChecking] = useState(true);

  // load the file (or start empty)
  useEffect(() => {
    if (!name) return;
    loadSource(name).then(
      (loaded) => {
        setBase(loaded);
        setText(loaded.text);
        const parsed = parse(loaded.text);
        if ("error" in parsed) {
          setMode("text");
          setTextProblem(parsed.error);
        } else {
          reset({ doc: parsed.doc, positions: laidOut(parsed.doc) });
        }
      },
      (error: Error) => setLoadError(error),
    );
  }, [name, reset]);

  // the YAML the canvas stands for: the loaded bytes, edited by the server's round trip
  const current = useCallback(async (): Promise<string> => {
    if (mode === "text") return text;
    return await applyDocument(base?.text ?? "", doc);
  }, [mode, text, base, doc]);

  // live validation (and the compiled machine when it validates), newest answer wins
  useEffect(() => {
    if (!base) return;
    const ticket = ++checked.current;
    setChecking(true);
    const timer = setTimeout(async () => {
      try {
        const source = await current();
        const answer = await validate(source);
        if (ticket !== checked.current) return;
        setDiagnostics(answer.diagnostics);
        setOutputs((old) => ({ ...old, ...answer.outputs }));
        const machine = answer.ok ? await compile(source) : null;
        if (ticket !== checked.current) return;
        setCompiled(machine);
        setChecking(false);
      } catch (error) {
        if (ticket === checked.current) setStatus({ text: (error as Error).message, kind: "error" });
      }
    }, 250);
    return () => clearTimeout(timer);
  }, [base, current]);

  const edit = useCallback(
    (change: (doc: Doc) => Doc) => {
      commit((state) => {
        const next = change(state.doc);
        return next === state.doc ? state : { ...state, doc: next };
      });
      setSaved(false);
    },
    [commit],
  );

  const save = async () => {
    const target = name ?? (typeof doc.name === "string" ? doc.name : "");
    setStatus({ text: "Saving…", kind: "busy" });
    try {
      const source = await current();
      const answer = await saveSource(target, source, base?.etag ?? null);
      setBase({ text: source, etag: answer.etag });
      setSaved(true);
      const said = answer.ok ? `Saved ${target}` : `Saved ${target}, with problems to fix`;
      setStatus({ text: said, kind: answer.ok ? "ok" : "error" });
      if (!name) navigate(`/builder/${target}`, { replace: true, state: { saved: said } });
    } catch (error) {
      setStatus({ text: (error as Error).message, kind: "error" });
    }
  };

  const install = async () => {
    const target = name ?? String(doc.name ?? "");
    try {
      const answer = await installWorkflow(target);
      setStatus({ text: answer.installed ? `Installed ${target} v${answer.version}` : `${target} v${answer.version} is already installed`, kind: "ok" });
    } catch (error) {
      setStatus({ text: (error as Error).message, kind: "error" });
    }
  };

  const autoLayout = () => {
    commit((state) => ({ ...state, positions: laidOut(state.doc) }));
    setTimeout(() => flow.fitView({ padding: 0.2 }), 0);
  };

  // keyboard: undo, redo (deletion is React Flow's, on Delete and Backspace)
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement;
      if (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName)) return;
      const mod = event.ctrlKey || event.metaKey;
      if (mod && event.key.toLowerCase() === "z") {
        event.preventDefault();
        if (event.shiftKey) redo();
        else undo();
      } else if (mod && event.key.toLowerCase() === "y") {
        event.preventDefault();
        redo();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [undo, redo]);

  // fit the loaded graph into view once its nodes are drawn
  const fitted = useRef(!name); // a new workflow starts at zoom 1
  const count = Object.keys(steps(doc)).length;
  useEffect(() => {
    if (fitted.current || count === 0) return;
    fitted.current = true;
    requestAnimationFrame(() => flow.fitView({ padding: 0.2 }));
  }, [count, flow]);

  const byStep = useMemo(() => {
    const found: Record<string, Diagnostic[]> = {};
    for (const d of diagnostics) {
      const id = stepOfPath(d.path);
      if (id) (found[id] ??= []).push(d);
    }
    return found;
  }, [diagnostics]);

  const all = steps(doc);
  const selectedStep = selection?.kind === "step" ? selection.id : selection?.kind === "edge" ? selection.to : null;
  const nodes: Node[] = Object.entries(all).map(([id, step]) => {
    const problems = (byStep[id] ?? []).filter((d) => d.severity === "error");
    const kind = step.type === "router" ? `router · ${String(step.strategy ?? "")}` : step.type === "tool" ? `tool · ${String(step.tool ?? "")}` : String(step.type ?? "?");
    return {
      id,
      position: positions[id] ?? { x: 0, y: 0 },
      selected: selection?.kind === "step" && selection.id === id,
      data: {
        label: (
          <div className="node" data-node={id} data-node-kind={String(step.type ?? "")} data-node-error={problems.length ? problems[0].code : undefined} title={problems.map((p) => p.message).join("\n")}>
            <strong>{id}</strong>
            <span className="muted">{kind}</span>
            {problems.length > 0 && <span className="node-error">{problems.length} problem{problems.length > 1 ? "s" : ""}</span>}
          </div>
        ),
      },
      style: { width: WIDTH, minHeight: HEIGHT, padding: 4, background: problems.length ? "#fee2e2" : "#ffffff", border: `1px solid ${problems.length ? "#dc2626" : "#9ca3af"}`, borderRadius: 6, fontSize: 12 },
      sourcePosition: "right" as Node["sourcePosition"],
      targetPosition: "left" as Node["targetPosition"],
    };
  });
  const edges: Edge[] = Object.entries(all).flatMap(([id, step]) =>
    afterOf(step)
      .filter((dep) => dep in all)
      .map((dep, index) => ({
        id: `${dep}->${id}`,
        source: dep,
        target: id,
        type: "builder",
        selected: selection?.kind === "edge" && selection.from === dep && selection.to === id,
        data: {
          when: typeof step.when === "string" ? step.when : undefined,
          problems: (byStep[id] ?? []).filter(
            (d) => d.severity === "error" && (d.path === `steps.${id}.after[${index}]` || (d.code === "cycle" && d.path.startsWith(`steps.${id}.after`) && (d.message.includes(`'${dep}'`) || d.path === `steps.${id}.after`))),
          ),
        },
      })),
  );

  const onNodesChange = (changes: NodeChange[]) => {
    for (const change of changes) {
      if (change.type === "position" && change.position) {
        const { id, position } = change;
        replace((state) => ({ ...state, positions: { ...state.positions, [id]: position } }));
      } else if (change.type === "select" && change.selected) {
        setSelection({ kind: "step", id: change.id });
      }
    }
  };
  const onEdgesChange = (changes: EdgeChange[]) => {
    for (const change of changes) {
      if (change.type === "add" || change.type === "replace") continue;
      const [from, to] = change.id.split("->");
      if (change.type === "select" && change.selected) setSelection({ kind: "edge", from, to });
    }
  };
  // one undo entry for a deletion: the steps and edges React Flow removes together
  const onDelete = ({ nodes: gone, edges: cut }: { nodes: Node[]; edges: Edge[] }) => {
    edit((d) => {
      let next = d;
      for (const edge of cut) next = disconnect(next, edge.source, edge.target);
      for (const node of gone) next = removeStep(next, node.id);
      return next;
    });
    setSelection(null);
  };
  const onConnect = (connection: Connection) => {
    edit((d) => connect(d, connection.source, connection.target));
  };
  const onDrop = (event: React.DragEvent) => {
    event.preventDefault();
    const type = event.dataTransfer.getData(DRAG_TYPE) as StepType;
    if (!STEP_TYPES.includes(type)) return;
    const position = flow.screenToFlowPosition({ x: event.clientX, y: event.clientY });
    const id = freeId(doc, type);
    commit((state) => ({
      doc: addStep(state.doc, id, newStep(type, variant[type])),
      positions: { ...state.positions, [id]: { x: position.x - WIDTH / 2, y: position.y - HEIGHT / 2 } },
    }));
    setSaved(false);
    setSelection({ kind: "step", id });
    setTab("properties");
  };

  if (loadError) return <Problem error={loadError} />;
  if (!base) return <p className="muted">Loading {name}…</p>;

  const refs = references(doc, selectedStep, outputs);
  const errors = diagnostics.filter((d) => d.severity === "error");
  let panel;
  if (selectedStep && all[selectedStep]) {
    const step = all[selectedStep];
    panel = (
      <>
        {selection?.kind === "edge" && (
          <p className="muted" data-edge-selected={`${selection.from}->${selection.to}`}>
            Edge {selection.from} → {selection.to}: its condition is <code>when</code> of {selection.to}.{" "}
            <button onClick={() => edit((d) => disconnect(d, selection.from, selection.to))}>Remove edge</button>
          </p>
        )}
        <PropertyPanel
          title={`${String(step.type)} step`}
          prefix={`steps.${selectedStep}.`}
          fields={stepFields(String(step.type), typeof step.strategy === "string" ? step.strategy : undefined)}
          value={step}
          id={selectedStep}
          onRename={(to) => {
            if (/^[a-z][a-z0-9_]{0,63}$/.test(to) && !(to in all)) {
              edit((d) => renameStep(d, selectedStep, to));
              setSelection({ kind: "step", id: to });
              commit((state) => {
                const { [selectedStep]: at, ...rest } = state.positions;
                return { ...state, positions: { ...rest, [to]: at ?? { x: 0, y: 0 } } };
              });
            } else setStatus({ text: `'${to}' is not a free step id (a-z, 0-9, _; starting with a letter)`, kind: "error" });
          }}
          onChange={(key, value) =>
            edit((d) => {
              const next = { ...steps(d)[selectedStep] };
              if (value === undefined) delete next[key];
              else next[key] = value as Json;
              return setStep(d, selectedStep, next);
            })
          }
          diagnostics={diagnostics}
          references={refs}
        />
      </>
    );
  } else {
    panel = (
      <PropertyPanel
        title="Workflow"
        prefix=""
        fields={workflowFields()}
        value={doc}
        onChange={(key, value) =>
          edit((d) => {
            const next = { ...d };
            if (value === undefined) delete next[key];
            else next[key] = value as Json;
            return next;
          })
        }
        diagnostics={diagnostics.filter((d) => !d.path.startsWith("steps."))}
        references={refs}
      />
    );
  }

  return (
    <div className="builder" data-page="builder" data-mode={mode} data-saved={saved ? "true" : "false"}>
      <div className="builder-toolbar">
        <strong>{name ?? "New workflow"}</strong>
        <button data-action="undo" onClick={undo} disabled={!history.past.length || mode === "text"}>Undo</button>
        <button data-action="redo" onClick={redo} disabled={!history.future.length || mode === "text"}>Redo</button>
        <button data-action="layout" onClick={autoLayout} disabled={mode === "text"}>Auto-layout</button>
        <button data-action="fit" onClick={() => flow.fitView({ padding: 0.2 })} disabled={mode === "text"}>Zoom to fit</button>
        <button data-action="save" onClick={save}>Save</button>
        <button data-action="install" onClick={install} disabled={!saved}>Install</button>
        <span
          data-validation={checking ? "checking" : errors.length ? "errors" : "ok"}
          className={checking ? "muted" : errors.length ? "bad" : "good"}
        >
          {checking ? "checking…" : errors.length ? `${errors.length} error${errors.length > 1 ? "s" : ""}` : "valid"}
        </span>
        {status && (
          <span data-status={status.kind} className={status.kind === "error" ? "bad" : "muted"} role="status">
            {status.text}
          </span>
        )}
      </div>
      {mode === "text" ? (
        <div className="builder-text">
          <p className="problem" role="alert">
            This source cannot be drawn ({textProblem}); edit it as text. The validator says:
          </p>
          <ul data-panel="problems">
            {diagnostics.map((d, i) => (
              <li key={i} data-diagnostic={d.code}>line {d.line}: {d.code} {d.path && `at ${d.path}`}: {d.message}</li>
            ))}
          </ul>
          <textarea data-source-text value={text} onChange={(e) => { setText(e.target.value); setSaved(false); }} rows={30} spellCheck={false} />
          <button
            data-action="to-canvas"
            onClick={() => {
              const parsed = parse(text);
              if ("error" in parsed) return setTextProblem(parsed.error);
              setBase((b) => ({ text, etag: b?.etag ?? null }));
              reset({ doc: parsed.doc, positions: laidOut(parsed.doc) });
              setMode("canvas");
            }}
          >
            Open on the canvas
          </button>
        </div>
      ) : (
        <div className="builder-body">
          <aside className="builder-palette" data-panel="palette">
            <h3>Steps</h3>
            {STEP_TYPES.map((type) => (
              <div key={type} className="palette-entry">
                <div
                  className="palette-item"
                  data-palette={type}
                  title={`Drag onto the canvas: a new ${type} step`}
                  draggable
                  onDragStart={(event) => {
                    event.dataTransfer.setData(DRAG_TYPE, type);
                    event.dataTransfer.effectAllowed = "move";
                  }}
                >
                  <strong>{type}</strong>
                </div>
                {type === "tool" && (
                  <select data-palette-variant="tool" value={variant.tool} onChange={(e) => setVariant({ ...variant, tool: e.target.value })}>
                    {BUILTIN_TOOLS.map((t) => <option key={t}>{t}</option>)}
                  </select>
                )}
                {type === "router" && (
                  <select data-palette-variant="router" value={variant.router} onChange={(e) => setVariant({ ...variant, router: e.target.value })}>
                    {ROUTER_KINDS.map((k) => <option key={k}>{k}</option>)}
                  </select>
                )}
              </div>
            ))}
          </aside>
          <div className="builder-canvas" data-canvas onDragOver={(e) => { e.preventDefault(); e.dataTransfer.dropEffect = "move"; }} onDrop={onDrop}>
            <ReactFlow
              nodes={nodes}
              edges={edges}
              edgeTypes={EDGE_TYPES}
              onNodesChange={onNodesChange}
              onEdgesChange={onEdgesChange}
              onConnect={onConnect}
              onDelete={onDelete}
              onNodeDragStop={() => commit((state) => ({ ...state }))}
              onPaneClick={() => setSelection(null)}
              deleteKeyCode={["Delete", "Backspace"]}
              fitView
              minZoom={0.1}
              proOptions={{ hideAttribution: true }}
            >
              <Background />
              <Controls showInteractive={false} />
            </ReactFlow>
          </div>
          <aside className="builder-side">
            <nav className="tabs">
              <button data-tab="properties" aria-pressed={tab === "properties"} onClick={() => setTab("properties")}>Properties</button>
              <button data-tab="problems" aria-pressed={tab === "problems"} onClick={() => setTab("problems")}>Problems ({diagnostics.length})</button>
              <button data-tab="compiled" aria-pressed={tab === "compiled"} onClick={() => setTab("compiled")}>Compiled</button>
            </nav>
            {tab === "properties" && panel}
            {tab === "problems" && (
              <ul data-panel="problems">
                {diagnostics.length === 0 && <li className="muted">No problems.</li>}
                {diagnostics.map((d, i) => (
                  <li key={i} data-diagnostic={d.code} className={d.severity === "error" ? "bad" : "muted"}>
                    <button className="link" onClick={() => { const id = stepOfPath(d.path); if (id && id in all) { setSelection({ kind: "step", id }); setTab("properties"); } }}>
                      {d.severity} {d.code}
                    </button>{" "}
                    {d.path && <code>{d.path}</code>} (line {d.line}): {d.message}
                  </li>
                ))}
              </ul>
            )}
            {tab === "compiled" && (
              <div data-panel="compiled">
                {compiled ? (
                  <>
                    <h4>Notes</h4>
                    <ul>
                      {compiled.notes.length === 0 && <li className="muted">No notes.</li>}
                      {compiled.notes.map((n, i) => <li key={i} data-note={n.code}>{n.message}</li>)}
                    </ul>
                    <h4>State machine (ASL)</h4>
                    <pre data-asl>{JSON.stringify(compiled.definition, null, 2)}</pre>
                  </>
                ) : (
                  <p className="muted">The workflow does not validate yet: see Problems.</p>
                )}
              </div>
            )}
          </aside>
        </div>
      )}
    </div>
  );
}
