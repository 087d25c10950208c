// /ui/workflows/<name> — versions, graph, success rate, p50/p95 duration, cost per day, recent runs.
import { Suspense, lazy, useCallback } from "react";
import { useParams } from "react-router-dom";
import { getJson, type WorkflowDetail } from "../api";
import { CostPerDay } from "../components/Charts";
import { LiveDot, Problem } from "../components/Layout";
import { RunsTable } from "../components/RunsTable";
import { count, seconds, usd, when } from "../format";
import { useLiveStream, useReload } from "../live";

const Graph = lazy(() => import("../components/Graph"));

export default function WorkflowPage() {
  const name = useParams().name ?? "";
  const wf = useReload(
    (signal) => getJson<WorkflowDetail>(`/workflows/${encodeURIComponent(name)}?days=30`, signal),
    name, 1000);
  const onEvent = useCallback(() => wf.reload(), [wf.reload]);
  const connected = useLiveStream(null, onEvent);
  if (wf.error && !wf.data) return <Problem error={wf.error} retry={wf.reload} />;
  if (!wf.data) return <p className="muted">Loading…</p>;
  const d = wf.data;
  return (
    <section data-page="workflow" data-workflow={d.name}>
      <div className="heading">
        <h1>{d.name}</h1>
        <LiveDot connected={connected} />
      </div>
      <dl className="facts">
        <dt>Runs (30 days)</dt>
        <dd>{count(d.runs)}</dd>
        <dt>Success rate</dt>
        <dd data-stat="success-rate">{d.success_rate == null ? "–" : `${(d.success_rate * 100).toFixed(1)}%`}</dd>
        <dt>Duration p50 / p95</dt>
        <dd>
          {seconds(d.p50_seconds)} / {seconds(d.p95_seconds)}
        </dd>
        <dt>Cost</dt>
        <dd>{usd(d.cost_usd)}</dd>
      </dl>
      <h2>Cost per day</h2>
      <CostPerDay days={d.cost_per_day} />
      {d.graph.length > 0 && (
        <>
          <h2>Graph</h2>
          <Suspense fallback={<div className="graph" />}>
            <Graph graph={d.graph} />
          </Suspense>
        </>
      )}
      <h2>Versions</h2>
      <table className="grid">
        <thead>
          <tr>
            <th className="num">Version</th>
            <th className="num">Runs</th>
            <th>First run</th>
            <th>Last run</th>
          </tr>
        </thead>
        <tbody>
          {d.versions.map((v) => (
            <tr key={String(v.version)}>
              <td className="num">{v.version ?? "–"}</td>
              <td className="num">{count(v.runs)}</td>
              <td>{when(v.first_started)}</td>
              <td>{when(v.last_started)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Recent runs</h2>
      <RunsTable runs={d.recent} showWorkflow={false} />
    </section>
  );
}
