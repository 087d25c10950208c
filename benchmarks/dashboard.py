"""Benchmark: the dashboard with 100,000 runs in the database.

    .venv/bin/python benchmarks/dashboard.py [--runs 100000] [--loads 10] [--updates 200]

On a fresh database (tests.pg: the server of SWITCHYARD_TEST_PG, default 127.0.0.1:5432), with
a real engine, the REST API and the dashboard (uvicorn, 127.0.0.1) in this process:

  1. bulk-loads `--runs` synthetic runs of customer-support (5 step records each, over 30 days,
     mixed statuses) and one synthetic run of 1,000 steps (10 chains of 100), then ANALYZE;
  2. starts one real customer-support run, parked at its approval gate;
  3. in headless Chromium (a fresh browser context each time: nothing cached), loads `/ui/`,
     `/ui/?status=failed`, the real run's page and the 1,000-step run's page `--loads` times:
     first contentful paint, and time to data (navigation start -> the first row or step in the
     DOM);
  4. times the data API alone (first page, a filtered page, page 200 by cursor, a run);
  5. update latency: with the run page open, commits `--updates` changes of a step record
     (UPDATE task_runs in its own transaction) and takes the time from COMMIT returning to the
     step's `data-status` changing on the page (both clocks are this machine's); then 10 real
     approvals: decision sent -> the approve step `completed` on the page.

Prints medians and nearest-rank p99s. Goals (seed): page loads < 2 s, updates < 2 s (aim 500 ms).
Not a CI test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from peers.common import summary
from playwright.sync_api import Browser, Page

from tests.pg import fresh_database
from tests.unit.dashboard.browser import approve, chromium, start_support_run
from tests.unit.dashboard.support import DashboardStack, start_dashboard
from tests.unit.dashboard.synthetic import insert_wide_run

STATUSES = ["succeeded"] * 80 + ["failed"] * 8 + ["cancelled"] * 2 + ["running"] * 6
STATUSES += ["waiting"] * 4
WATCH_DATA = """
(() => {
  const selector = %s;
  const seen = () => {
    if (!window.__dataAt && document.querySelector(selector)) window.__dataAt = performance.now();
  };
  new MutationObserver(seen).observe(document, {subtree: true, childList: true});
})();
"""


def load_runs(conninfo: str, runs: int) -> None:
    """Synthetic history, written as the engine writes it (sfn_executions, workflow_runs,
    task_runs), without the NOTIFY triggers (no page is open yet)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        machine, definition = conn.execute(
            "SELECT arn, definition_hash FROM sfn_state_machines WHERE name = 'customer-support'"
        ).fetchone()  # type: ignore[misc]
        started = time.perf_counter()
        conn.execute(
            "INSERT INTO sfn_executions (arn, machine_arn, definition_hash, name, status,"
            " started_at, stopped_at)"
            " SELECT %(m)s || ':bench-' || i, %(m)s, %(d)s, 'bench-' || i,"
            "  'SUCCEEDED', now() - (i * interval '26 seconds'),"
            "  now() - (i * interval '26 seconds') + interval '40 seconds'"
            " FROM generate_series(1, %(n)s) i",
            {"m": machine, "d": definition, "n": runs},
        )
        conn.execute(
            "INSERT INTO workflow_runs (execution_id, run_id, workflow, workflow_version, status,"
            " input, cost_usd, input_tokens, output_tokens, started_at, ended_at)"
            " SELECT e.id, e.name, 'customer-support', 1, (%(s)s::text[])[1 + e.id %% 100],"
            '  \'{"ticket_id": "T-1"}\', (e.id %% 97) / 1000.0, 3000, 170, e.started_at,'
            "  CASE WHEN (%(s)s::text[])[1 + e.id %% 100] IN ('running', 'waiting') THEN NULL"
            "   ELSE e.stopped_at END"
            " FROM sfn_executions e WHERE e.name LIKE 'bench-%%'",
            {"s": STATUSES},
        )
        conn.execute(
            "INSERT INTO task_runs (execution_id, step_id, status, attempts, output, cost_usd,"
            " input_tokens, output_tokens, model, started_at, ended_at)"
            " SELECT r.execution_id, s.step, 'completed', 1, '{\"text\": \"ok\"}',"
            "  r.cost_usd / 5, 600, 34, 'claude-sonnet-4-5', r.started_at, r.started_at"
            " FROM workflow_runs r CROSS JOIN (VALUES ('classify'), ('research'),"
            "  ('fetch_history'), ('draft'), ('approve')) s(step)"
            " WHERE r.run_id LIKE 'bench-%%'"
        )
        print(f"loaded {runs:,} runs and {runs * 5:,} step records in"
              f" {time.perf_counter() - started:.1f} s")  # fmt: skip
        conn.execute("ANALYZE")


def page_load(browser: Browser, url: str, selector: str) -> tuple[float, float]:
    """(first contentful paint, time to data) in ms, in a fresh context (cold cache)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        context.add_init_script(WATCH_DATA % json.dumps(selector))
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector(selector, timeout=30_000)
        page.wait_for_function("() => window.__dataAt !== undefined")
        paint = page.evaluate(
            "() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN"
        )
        return float(paint), float(page.evaluate("() => window.__dataAt"))
    finally:
        context.close()


def watch_step(page: Page, step: str) -> None:
    page.evaluate(
        """(step) => {
          const row = document.querySelector(`[data-step="${step}"]`);
          window.__changes = [];
          new MutationObserver(() => window.__changes.push(
            [row.dataset.status, performance.timeOrigin + performance.now()])
          ).observe(row, {attributes: true, attributeFilter: ['data-status']});
        }""",
        step,
    )


def changed_at(page: Page, status: str) -> float:
    page.wait_for_function(
        "(s) => window.__changes.some(c => c[0] === s)", arg=status, timeout=10_000
    )
    stamps = page.evaluate("(s) => window.__changes.filter(c => c[0] === s).map(c => c[1])", status)
    return float(stamps[0])


def commit_latency(board: DashboardStack, conninfo: str, page: Page, updates: int) -> list[float]:
    run = page.locator("[data-page=run]").get_attribute("data-run-id")
    watch_step(page, "research")
    samples = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        (execution,) = conn.execute(
            "SELECT execution_id FROM workflow_runs WHERE run_id = %s", (run,)
        ).fetchone()  # type: ignore[misc]
        for i in range(updates):
            status = f"bench{i}"  # a fresh status each time: the change is unmistakable
            page.evaluate("() => { window.__changes = []; }")
            conn.execute(
                "UPDATE task_runs SET status = %s, updated_at = now(), version = version + 1"
                " WHERE execution_id = %s AND step_id = 'research'",
                (status, execution),
            )  # autocommit: COMMIT has returned when execute does
            committed = time.time() * 1000
            samples.append(changed_at(page, status) - committed)
        conn.execute(
            "UPDATE task_runs SET status = 'completed' WHERE execution_id = %s AND"
            " step_id = 'research'",
            (execution,),
        )
    return samples


def approval_latency(board: DashboardStack, browser: Browser, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        run_id = start_support_run(board)
        context = browser.new_context(base_url=board.url)
        page = context.new_page()
        page.goto(f"/ui/runs/{run_id}")
        page.wait_for_selector('[data-step="approve"][data-status="waiting"]')
        page.wait_for_selector("[data-page=run] .live.on")
        watch_step(page, "approve")
        with board.rest() as rest:
            sent = time.time() * 1000
            assert approve(rest, run_id).status_code == 200
        samples.append(changed_at(page, "completed") - sent)
        context.close()
    return samples


def api_times(board: DashboardStack, runs: int, n: int = 30) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with board.client() as client:
        first = client.get("/api/dashboard/runs?limit=50").json()
        cursor = first["next"]
        for _ in range(min(199, runs // 50 - 2)):
            cursor = client.get(
                "/api/dashboard/runs", params={"limit": 50, "cursor": cursor}
            ).json()["next"]
        paths = {
            "runs page 1": "/api/dashboard/runs?limit=50",
            "runs status=failed": "/api/dashboard/runs?limit=50&status=failed",
            "runs workflow + 7d": "/api/dashboard/runs?limit=50&workflow=customer-support"
            "&since=" + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 7 * 86400)),
            "runs search prefix": "/api/dashboard/runs?limit=50&q=bench-9999",
            "runs deep page (cursor)": f"/api/dashboard/runs?limit=50&cursor={cursor}",
            "run (5 steps)": f"/api/dashboard/runs/bench-{runs // 2}",
            "run wide-1000 (1,000 steps)": "/api/dashboard/runs/wide-1000",
            "workflows (30 d)": "/api/dashboard/workflows",
            "costs (30 d)": "/api/dashboard/costs",
        }
        for name, path in paths.items():
            samples = []
            for _ in range(n):
                started = time.perf_counter()
                answer = client.get(path)
                samples.append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 200, (path, answer.text)
            out[name] = summary(samples)
    return out


def show(name: str, samples: list[float]) -> None:
    s = summary(samples)
    print(f"  {name:<34} p50 {s['p50_ms']:8.1f} ms   p99 {s['p99_ms']:8.1f} ms   (n={s['n']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--updates", type=int, default=200)
    args = parser.parse_args()
    with (
        fresh_database() as conninfo,
        tempfile.TemporaryDirectory() as tmp,
        start_dashboard(conninfo, Path(tmp)) as board,
    ):
        load_runs(conninfo, args.runs)
        with psycopg.connect(conninfo) as conn:
            (machine,) = conn.execute(
                "SELECT arn FROM sfn_state_machines WHERE name = 'customer-support'"
            ).fetchone()  # type: ignore[misc]
        wide = "wide-1000"
        insert_wide_run(conninfo, machine, wide)
        run_id = start_support_run(board)
        with chromium() as browser:
            pages = {
                "/ui/": ("/ui/", "[data-run-id]"),
                "/ui/?status=failed": ("/ui/?status=failed", "[data-run-id]"),
                "/ui/runs/<real run>": (f"/ui/runs/{run_id}", "[data-step]"),
                "/ui/runs/<1,000 steps>": (f"/ui/runs/{wide}", '[data-step="c9_s99"]'),
            }
            print(f"\npage loads, cold cache, {args.runs:,} runs in the database:")
            for name, (path, selector) in pages.items():
                paints, data = [], []
                for _ in range(args.loads):
                    paint, ready = page_load(browser, board.url + path, selector)
                    paints.append(paint)
                    data.append(ready)
                print(f"  {name:<24} first paint p50 {statistics.median(paints):6.0f} ms"
                      f"   time to data p50 {statistics.median(data):6.0f} ms"
                      f"   max {max(data):6.0f} ms")  # fmt: skip
            print("\ndata API (one keep-alive client):")
            for name, s in api_times(board, args.runs).items():
                print(f"  {name:<34} p50 {s['p50_ms']:8.1f} ms   p99 {s['p99_ms']:8.1f} ms")
            print("\nupdate latency, commit -> the step's data-status on an open page:")
            context = browser.new_context(base_url=board.url)
            page = context.new_page()
            page.goto(f"/ui/runs/{run_id}")
            page.wait_for_selector("[data-page=run] .live.on")
            show("UPDATE task_runs, committed", commit_latency(board, conninfo, page,
                                                               args.updates))  # fmt: skip
            context.close()
            show("approval sent -> step completed", approval_latency(board, browser, 10))


if __name__ == "__main__":
    main()
