// /ui/ — runs, newest first. Filters and the page's cursor live in the URL (shareable, and the
// back button pages back); the first page follows the live stream.
import { useCallback, useState } from "react";
import { useSearchParams } from "react-router-dom";
import { getJson, type RunsPage as Page } from "../api";
import { LiveDot, Problem } from "../components/Layout";
import { RunsTable } from "../components/RunsTable";
import { RUN_STATUSES } from "../format";
import { useLiveStream, useReload } from "../live";

const RANGES: Record<string, number> = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 };

function apiQuery(params: URLSearchParams): string {
  const query = new URLSearchParams();
  for (const name of ["status", "workflow", "q", "cursor"]) {
    const value = params.get(name);
    if (value) query.set(name, value);
  }
  const range = params.get("range");
  if (range && RANGES[range]) {
    // rounded to the minute, so that one page's reads agree on the range
    const since = Math.floor((Date.now() - RANGES[range] * 1000) / 60000) * 60000;
    query.set("since", new Date(since).toISOString());
  }
  query.set("limit", "50");
  return query.toString();
}

export function RunsPage() {
  const [params, setParams] = useSearchParams();
  const query = apiQuery(params);
  const runs = useReload((signal) => getJson<Page>(`/runs?${query}`, signal), query, 250);
  const firstPage = !params.get("cursor");
  const [behind, setBehind] = useState(false);
  const onEvent = useCallback(() => {
    if (firstPage) runs.reload();
    else setBehind(true);
  }, [firstPage, runs.reload]);
  const connected = useLiveStream(null, onEvent);
  const [search, setSearch] = useState(params.get("q") ?? "");

  const update = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [name, value] of Object.entries(changes)) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    if (!("cursor" in changes)) next.delete("cursor");
    setBehind(false);
    setParams(next);
  };

  return (
    <section data-page="runs">
      <div className="heading">
        <h1>Runs</h1>
        <LiveDot connected={connected} />
      </div>
      <form
        className="filters"
        onSubmit={(event) => {
          event.preventDefault();
          update({ q: search.trim() || null });
        }}
      >
        <input
          name="q"
          placeholder="Run id"
          value={search}
          onChange={(event) => setSearch(event.target.value)}
          aria-label="Search by run id"
        />
        <select
          aria-label="Status"
          value={params.get("status") ?? ""}
          onChange={(event) => update({ status: event.target.value || null })}
        >
          <option value="">any status</option>
          {RUN_STATUSES.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
        <input
          aria-label="Workflow"
          placeholder="Workflow"
          defaultValue={params.get("workflow") ?? ""}
          onBlur={(event) => update({ workflow: event.target.value.trim() || null })}
          onKeyDown={(event) => {
            if (event.key === "Enter") {
              event.preventDefault();
              update({ workflow: event.currentTarget.value.trim() || null });
            }
          }}
        />
        <select
          aria-label="Started within"
          value={params.get("range") ?? ""}
          onChange={(event) => update({ range: event.target.value || null })}
        >
          <option value="">any time</option>
          {Object.keys(RANGES).map((range) => (
            <option key={range} value={range}>
              last {range}
            </option>
          ))}
        </select>
        <button type="submit">Search</button>
      </form>
      {behind && (
        <p className="notice">
          New runs have started.{" "}
          <button type="button" onClick={() => update({ cursor: null })}>
            Show the newest
          </button>
        </p>
      )}
      {runs.error && <Problem error={runs.error} retry={runs.reload} />}
      {runs.data ? (
        <>
          <RunsTable runs={runs.data.runs} />
          <div className="pager">
            {!firstPage && (
              <button type="button" onClick={() => update({ cursor: null })}>
                Newest
              </button>
            )}
            {runs.data.next && (
              <button type="button" onClick={() => update({ cursor: runs.data!.next })}>
                Older →
              </button>
            )}
          </div>
        </>
      ) : (
        !runs.error && <p className="muted">Loading…</p>
      )}
    </section>
  );
}
