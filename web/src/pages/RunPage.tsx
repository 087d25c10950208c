// /ui/runs/<run_id> — one run, live: its graph coloured by step status, each step's numbers,
// budgets, the open gate with Approve/Reject, the timeline, and the input and output.
import { Suspense, lazy, useCallback, useState } from "react";
import { Link, useParams } from "react-router-dom";
import { decideGate, getJson, type Gate, type RunDetail, type Segment, type Step } from "../api";
import { signedInAs } from "../auth";
import { JsonView } from "../components/JsonView";
import { LiveDot, Problem, StatusBadge } from "../components/Layout";
import { count, duration, seconds, usd, when } from "../format";
import { type LiveEvent, useLiveStream, useReload } from "../live";

const Graph = lazy(() => import("../components/Graph"));

const REVIEWER_KEY = "switchyard.reviewer";

export default function RunPage() {
  const runId = useParams().runId ?? "";
  const path = `/runs/${encodeURIComponent(runId)}`;
  const run = useReload((signal) => getJson<RunDetail>(path, signal), runId);
  const { mutate, reload } = run;
  const onEvent = useCallback(
    (event: LiveEvent) => {
      // a step's new status shows at once; the read that follows brings the rest
      if (event.t === "step" && event.k && !event.i && event.s) {
        const { k, s } = event;
        mutate((data) =>
          data.steps[k]
            ? { ...data, steps: { ...data.steps, [k]: { ...data.steps[k], status: s } } }
            : data,
        );
      } else if (event.t === "run" && event.s) {
        const s = event.s;
        mutate((data) => ({ ...data, status: s }));
      }
      reload();
    },
    [mutate, reload],
  );
  const connected = useLiveStream(runId, onEvent);

  if (run.error && !run.data) return <Problem error={run.error} retry={run.reload} />;
  if (!run.data) return <p className="muted">Loading…</p>;
  const data = run.data;
  const order = [
    ...data.graph.map((n) => n.id),
    ...Object.keys(data.steps).filter((id) => !data.graph.some((n) => n.id === id)),
  ];
  const kinds = Object.fromEntries(data.graph.map((n) => [n.id, n.kind]));

  return (
    <section data-page="run" data-run-id={data.run_id} data-run-status={data.status}>
      <div className="heading">
        <h1 className="mono">{data.run_id}</h1>
        <StatusBadge status={data.status} />
        <LiveDot connected={connected} />
      </div>
      {run.error && <Problem error={run.error} retry={run.reload} />}
      <dl className="facts">
        <dt>Workflow</dt>
        <dd>
          <Link to={`/workflows/${encodeURIComponent(data.workflow)}`}>{data.workflow}</Link>
          {data.version != null && <span className="muted"> v{data.version}</span>}
        </dd>
        {data.parent_run_id && (
          <>
            <dt>Started by</dt>
            <dd>
              <Link to={`/runs/${encodeURIComponent(data.parent_run_id)}`}>{data.parent_run_id}</Link>
            </dd>
          </>
        )}
        <dt>Started</dt>
        <dd>{when(data.started_at)}</dd>
        <dt>Duration</dt>
        <dd>{duration(data.started_at, data.ended_at)}</dd>
        <dt>Cost</dt>
        <dd data-total="cost">{usd(data.cost_usd)}</dd>
        <dt>Tokens in / out</dt>
        <dd>
          {count(data.tokens.input)} / {count(data.tokens.output)}
        </dd>
        {data.execution_arn.includes(":states:") && !data.execution_arn.includes(":000000000000:") && (
          <>
            <dt>AWS</dt>
            <dd>
              <a href={consoleLink(data.execution_arn)} target="_blank" rel="noreferrer">
                Step Functions console
              </a>
            </dd>
          </>
        )}
      </dl>
      {data.error && (
        <div className="problem" data-run-error>
          <strong>{data.error.type}</strong>
          {data.error.step && <> at {data.error.step}</>}: {data.error.message}
        </div>
      )}
      {data.segments && <Segments segments={data.segments} />}
      {data.budgets.length > 0 && <Budgets budgets={data.budgets} />}
      {data.gates.map((gate) => (
        <GatePanel key={gate.id} gate={gate} runId={data.run_id} onDecided={run.reload} />
      ))}
      <h2>Graph</h2>
      <Suspense fallback={<div className="graph" />}>
        <Graph
        graph={data.graph}
        steps={data.steps}
        onSelect={(step) => document.getElementById(`step-${step}`)?.scrollIntoView({ block: "center" })}
        />
      </Suspense>
      <h2>Steps</h2>
      <table className="grid steps">
        <thead>
          <tr>
            <th>Step</th>
            <th>Status</th>
            <th className="num">Attempts</th>
            <th className="num">Duration</th>
            <th>Model</th>
            <th className="num">Tokens in / out</th>
            <th className="num">Cost</th>
            <th>Error / output</th>
          </tr>
        </thead>
        <tbody>
          {order.map((id) => (
            <StepRow key={id} id={id} kind={kinds[id]} step={data.steps[id]} runId={data.run_id} />
          ))}
        </tbody>
      </table>
      <h2>Input</h2>
      <JsonView value={data.input} size={data.input_bytes} label="input" fetchPath={`${path}/values/input`} blobPath={`${path}/blobs`} />
      <h2>Output</h2>
      <JsonView value={data.output} size={data.output_bytes} label="output" fetchPath={`${path}/values/output`} blobPath={`${path}/blobs`} />
      <h2>Timeline</h2>
      <Timeline run={data} />
    </section>
  );
}

function consoleLink(arn: string): string {
  const region = arn.split(":")[3];
  return `https://${region}.console.aws.amazon.com/states/home?region=${region}#/v2/executions/details/${encodeURIComponent(arn)}`;
}

function Budgets({ budgets }: { budgets: RunDetail["budgets"] }) {
  const show = (kind: string, value: number) =>
    kind === "usd" ? usd(value) : kind === "seconds" ? seconds(value) : count(value);
  return (
    <div className="budgets">
      {budgets.map((b) => (
        <div key={b.kind} className="budget" data-budget={b.kind}>
          <span>
            {b.kind}: {show(b.kind, b.used)} of {show(b.kind, b.limit)} — {show(b.kind, b.left)} left
          </span>
          <progress max={b.limit} value={Math.min(b.used, b.limit)} />
        </div>
      ))}
    </div>
  );
}

function StepRow({ id, kind, step, runId }: { id: string; kind?: string; step?: Step; runId: string }) {
  const [open, setOpen] = useState(false);
  const status = step?.status ?? "pending";
  return (
    <tr id={`step-${id}`} data-step={id} data-status={status}>
      <td className="mono">
        {id}
        {kind && <span className="muted"> {kind}</span>}
        {step?.children.map((child) => (
          <div key={child.run_id}>
            ↳ <Link to={`/runs/${encodeURIComponent(child.run_id)}`}>{child.run_id}</Link>{" "}
            <StatusBadge status={child.status} />
          </div>
        ))}
        {step?.replayed_from && (
          <div className="muted" data-replayed-from={step.replayed_from}>
            replayed from{" "}
            <Link to={`/runs/${encodeURIComponent(step.replayed_from)}`}>{step.replayed_from}</Link>
          </div>
        )}
        {step?.items && (
          <div className="muted">
            items: {step.items.completed}/{step.items.total} done
            {step.items.failed ? `, ${step.items.failed} failed` : ""}
          </div>
        )}
      </td>
      <td>
        <StatusBadge status={status} />
      </td>
      <td className="num">{step ? step.attempts : "–"}</td>
      <td className="num">{step ? duration(step.started_at, step.ended_at) : "–"}</td>
      <td>{step?.model ?? ""}</td>
      <td className="num">{step ? `${count(step.tokens.input)} / ${count(step.tokens.output)}` : "–"}</td>
      <td className="num" data-cost>
        {step ? usd(step.cost_usd) : "–"}
      </td>
      <td className="detail">
        {step?.error && (
          <div className="error-text">
            <strong>{step.error.type}</strong>: {step.error.message}
            {step.error.cause != null && (
              <pre className="json">{typeof step.error.cause === "string" ? step.error.cause : JSON.stringify(step.error.cause, null, 2)}</pre>
            )}
          </div>
        )}
        {step?.output_bytes != null &&
          (open ? (
            <JsonView
              value={step.output}
              size={step.output_bytes}
              label="output"
              fetchPath={`/runs/${encodeURIComponent(runId)}/values/output?step=${encodeURIComponent(id)}`}
              blobPath={`/runs/${encodeURIComponent(runId)}/blobs`}
            />
          ) : (
            <button type="button" onClick={() => setOpen(true)}>
              Output
            </button>
          ))}
      </td>
    </tr>
  );
}

function GatePanel({ gate, runId, onDecided }: { gate: Gate; runId: string; onDecided: () => void }) {
  // on AWS the signed-in person decides (the data API takes them from their token)
  const person = signedInAs();
  const [reviewer, setReviewer] = useState(() => person ?? localStorage.getItem(REVIEWER_KEY) ?? "");
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const decide = (action: "approve" | "reject") => {
    if (!reviewer.trim()) {
      setError("Say who you are: the decision is recorded with your name.");
      return;
    }
    if (!person) localStorage.setItem(REVIEWER_KEY, reviewer.trim());
    setBusy(true);
    setError(null);
    decideGate(runId, gate.step, action, reviewer.trim(), note)
      .then(() => {
        setDone(action === "approve" ? "Approved" : "Rejected");
        onDecided();
      })
      .catch((reason: Error) => setError(reason.message))
      .finally(() => setBusy(false));
  };
  const decidable = gate.kind === "approval" || gate.kind === "human";
  return (
    <div className="gate" data-gate={gate.step} data-gate-kind={gate.kind}>
      <h2>
        Waiting at {gate.step} <span className="muted">({gate.kind}{gate.assignee ? `, for ${gate.assignee}` : ""})</span>
      </h2>
      {gate.message && <p className="gate-message">{gate.message}</p>}
      {gate.show && Object.keys(gate.show).length > 0 && (
        <dl className="facts">
          {Object.entries(gate.show).map(([name, value]) => (
            <div key={name}>
              <dt>{name}</dt>
              <dd>
                <pre className="json">{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>
              </dd>
            </div>
          ))}
        </dl>
      )}
      {gate.request != null && <pre className="json">{JSON.stringify(gate.request, null, 2)}</pre>}
      {gate.deadline && <p className="muted">Decide by {when(gate.deadline)}.</p>}
      {decidable ? (
        done ? (
          <p className="notice">{done}.</p>
        ) : (
          <div className="decide">
            {person ? (
              <span className="muted">as {person}</span>
            ) : (
              <input aria-label="Your name" placeholder="Your name" value={reviewer} onChange={(e) => setReviewer(e.target.value)} />
            )}
            <input aria-label="Note" placeholder="Note (optional)" value={note} onChange={(e) => setNote(e.target.value)} />
            <button type="button" className="approve" disabled={busy} onClick={() => decide("approve")}>
              Approve
            </button>
            <button type="button" className="reject" disabled={busy} onClick={() => decide("reject")}>
              Reject
            </button>
          </div>
        )
      ) : (
        <p className="muted">
          A {gate.kind} gate is resumed with <code>switchyard resume {runId}</code> or POST /runs/{runId}/resume.
        </p>
      )}
      {error && <p className="error-text" role="alert">{error}</p>}
    </div>
  );
}

function Timeline({ run }: { run: RunDetail }) {
  const start = Date.parse(run.started_at);
  const events = run.timeline.events;
  return (
    <>
      {run.timeline.total > events.length && (
        <p className="muted">
          The last {events.length} of {count(run.timeline.total)} events.
        </p>
      )}
      <ol className="timeline">
        {events.map((event) => (
          <li key={event.id} data-event={event.type}>
            <span className="mono muted">+{seconds((Date.parse(event.at) - start) / 1000)}</span>{" "}
            {event.type}
            {event.state && <span className="mono"> {event.state}</span>}
            {event.error && <span className="error-text"> {event.error}</span>}
          </li>
        ))}
      </ol>
    </>
  );
}

/** A run that continued as new: one row per execution, oldest first, its share of the cost. */
function Segments({ segments }: { segments: Segment[] }) {
  return (
    <>
      <h2>Segments</h2>
      <table className="grid segments">
        <thead>
          <tr>
            <th className="num">Segment</th>
            <th>Execution</th>
            <th>Status</th>
            <th>Started</th>
            <th className="num">Duration</th>
            <th className="num">Tokens in / out</th>
            <th className="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {segments.map((seg) => (
            <tr key={seg.run_id} data-segment={seg.segment} data-status={seg.status}>
              <td className="num">{seg.segment}</td>
              <td className="mono">{seg.run_id}</td>
              <td>
                <StatusBadge status={seg.status} />
              </td>
              <td>{when(seg.started_at)}</td>
              <td className="num">{duration(seg.started_at, seg.ended_at)}</td>
              <td className="num">
                {count(seg.input_tokens)} / {count(seg.output_tokens)}
              </td>
              <td className="num">{usd(seg.cost_usd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
