// /ui/workflows — every workflow with runs in the last 30 days (or installed).
import { useCallback } from "react";
import { Link } from "react-router-dom";
import { getJson, type WorkflowSummary } from "../api";
import { LiveDot, Problem } from "../components/Layout";
import { count, usd, when } from "../format";
import { useLiveStream, useReload } from "../live";

export default function WorkflowsPage() {
  const list = useReload((signal) => getJson<{ workflows: WorkflowSummary[] }>("/workflows?days=30", signal), "all", 1000);
  const onEvent = useCallback(() => list.reload(), [list.reload]);
  const connected = useLiveStream(null, onEvent);
  return (
    <section data-page="workflows">
      <div className="heading">
        <h1>Workflows</h1>
        <span className="muted">last 30 days</span>
        <LiveDot connected={connected} />
      </div>
      {list.error && <Problem error={list.error} retry={list.reload} />}
      {list.data && (
        <table className="grid">
          <thead>
            <tr>
              <th>Workflow</th>
              <th className="num">Version</th>
              <th className="num">Runs</th>
              <th className="num">Open</th>
              <th className="num">Success</th>
              <th className="num">Cost</th>
              <th>Last run</th>
            </tr>
          </thead>
          <tbody>
            {list.data.workflows.map((w) => (
              <tr key={w.name} data-workflow={w.name}>
                <td>
                  <Link to={`/workflows/${encodeURIComponent(w.name)}`}>{w.name}</Link>
                </td>
                <td className="num">{w.version ?? "–"}</td>
                <td className="num">{count(w.runs)}</td>
                <td className="num">{count(w.open)}</td>
                <td className="num">{w.success_rate == null ? "–" : `${(w.success_rate * 100).toFixed(1)}%`}</td>
                <td className="num">{usd(w.cost_usd)}</td>
                <td>{when(w.last_started)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && list.data.workflows.length === 0 && <p className="muted">No runs in the last 30 days.</p>}
    </section>
  );
}
