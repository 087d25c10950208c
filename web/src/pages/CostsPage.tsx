// /ui/costs — spend by workflow, model, tenant and day; budget pauses.
import { useCallback, useState } from "react";
import { Link } from "react-router-dom";
import { getJson, type Costs } from "../api";
import { CostBy, CostPerDay } from "../components/Charts";
import { LiveDot, Problem, StatusBadge } from "../components/Layout";
import { when } from "../format";
import { useLiveStream, useReload } from "../live";

export default function CostsPage() {
  const [days, setDays] = useState(30);
  const costs = useReload((signal) => getJson<Costs>(`/costs?days=${days}`, signal), String(days), 2000);
  const onEvent = useCallback(() => costs.reload(), [costs.reload]);
  const connected = useLiveStream(null, onEvent);
  return (
    <section data-page="costs">
      <div className="heading">
        <h1>Costs</h1>
        <select aria-label="Period" value={days} onChange={(e) => setDays(Number(e.target.value))}>
          {[1, 7, 30, 90, 365].map((n) => (
            <option key={n} value={n}>
              last {n} {n === 1 ? "day" : "days"}
            </option>
          ))}
        </select>
        <LiveDot connected={connected} />
      </div>
      {costs.error && <Problem error={costs.error} retry={costs.reload} />}
      {costs.data && (
        <>
          <h2>By day</h2>
          <CostPerDay days={costs.data.by_day} />
          <div className="columns">
            <div>
              <h2>By workflow</h2>
              <CostBy rows={costs.data.by_workflow} name="workflow" />
            </div>
            <div>
              <h2>By model</h2>
              <CostBy rows={costs.data.by_model} name="model" />
            </div>
            <div>
              <h2>By tenant</h2>
              <CostBy rows={costs.data.by_tenant} name="tenant" />
            </div>
          </div>
          <h2>Budget pauses</h2>
          {costs.data.budget_pauses.length === 0 ? (
            <p className="muted">No run was paused by a budget in this period.</p>
          ) : (
            <table className="grid">
              <thead>
                <tr>
                  <th>Run</th>
                  <th>Workflow</th>
                  <th>Step</th>
                  <th>Gate</th>
                  <th>Paused</th>
                  <th>Resumed</th>
                  <th>By</th>
                </tr>
              </thead>
              <tbody>
                {costs.data.budget_pauses.map((p) => (
                  <tr key={`${p.run_id}-${p.step}-${p.opened_at}`}>
                    <td className="mono">
                      <Link to={`/runs/${encodeURIComponent(p.run_id)}`}>{p.run_id}</Link>
                    </td>
                    <td>{p.workflow}</td>
                    <td>{p.step}</td>
                    <td>
                      <StatusBadge status={p.status} />
                    </td>
                    <td>{when(p.opened_at)}</td>
                    <td>{when(p.decided_at)}</td>
                    <td>{p.reviewer ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
