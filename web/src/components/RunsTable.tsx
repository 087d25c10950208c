import { Link } from "react-router-dom";
import type { RunRow, Stuck } from "../api";
import { count, duration, usd, when } from "../format";
import { StatusBadge } from "./Layout";

export function RunsTable({ runs, showWorkflow = true }: { runs: RunRow[]; showWorkflow?: boolean }) {
  if (runs.length === 0) return <p className="muted">No runs match.</p>;
  return (
    <table className="grid runs">
      <thead>
        <tr>
          <th>Run</th>
          {showWorkflow && <th>Workflow</th>}
          <th>Status</th>
          <th>Started</th>
          <th className="num">Duration</th>
          <th className="num">Cost</th>
          <th className="num">Tokens in / out</th>
          <th>Waiting on</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr
            key={run.run_id + run.started_at}
            data-run-id={run.run_id}
            data-run-status={run.status}
            data-run-stuck={run.stuck ? "true" : undefined}
          >
            <td className="mono">
              <Link to={`/runs/${encodeURIComponent(run.run_id)}`}>{run.run_id}</Link>
            </td>
            {showWorkflow && (
              <td>
                <Link to={`/workflows/${encodeURIComponent(run.workflow)}`}>{run.workflow}</Link>
                {run.version != null && <span className="muted"> v{run.version}</span>}
              </td>
            )}
            <td>
              <StatusBadge status={run.status} />
            </td>
            <td>{when(run.started_at)}</td>
            <td className="num">{duration(run.started_at, run.ended_at)}</td>
            <td className="num">{usd(run.cost_usd)}</td>
            <td className="num">
              {count(run.tokens.input)} / {count(run.tokens.output)}
            </td>
            <td>
              {run.stuck && <StuckChip stuck={run.stuck} />}
              {run.waiting_on.map((gate) => (
                <span key={gate.step} className="chip">
                  {gate.step}
                  {gate.assignee ? ` · ${gate.assignee}` : ""}
                </span>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function StuckChip({ stuck }: { stuck: Stuck }) {
  const what = stuck.waiting_on.map((wait) => `${wait.kind} ${wait.step ?? wait.state ?? ""}`.trim());
  const minutes = Math.floor(stuck.idle_seconds / 60);
  return (
    <span className="chip stuck" title={`no transition since ${stuck.last_transition_at}; waiting on ${what.join(", ")}`}>
      stuck {minutes > 0 ? `${minutes} min` : `${Math.floor(stuck.idle_seconds)} s`} · {what.join(", ")}
    </span>
  );
}
