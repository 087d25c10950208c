"""The dashboard's data API over a real engine: keyset pages, filters, a run's detail, values on
demand, decisions through the approval path, the live stream, and bad input refused clearly."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx

from switchyard.api.app import create_app
from switchyard.dashboard import mount_dashboard
from tests.unit.api.support import start, unique, wait_for
from tests.unit.dashboard.browser import approve, start_support_run
from tests.unit.dashboard.support import WEB_DIST, DashboardStack, serve


def _noop_runs(board: DashboardStack, prefix: str, n: int) -> list[str]:
    ids = []
    with board.rest() as rest:
        for i in range(n):
            answer = start(rest, board.stack, "noop", {"n": i}, key=f"{prefix}-{i}")
            assert answer.status_code == 201, answer.text
            ids.append(f"{prefix}-{i}")
        for run_id in ids:
            wait_for(rest, run_id, {"succeeded"})
    return ids


def test_pages_by_keyset_cover_every_run_once_newest_first(board: DashboardStack) -> None:
    prefix = unique("page")
    ids = _noop_runs(board, prefix, 5)
    seen: list[dict[str, Any]] = []
    cursor = None
    with board.client() as client:
        while True:
            params = {"q": prefix, "limit": 2, **({"cursor": cursor} if cursor else {})}
            page = client.get("/api/dashboard/runs", params=params).json()
            seen.extend(page["runs"])
            cursor = page["next"]
            if cursor is None:
                break
    assert sorted(r["run_id"] for r in seen) == sorted(ids)
    assert [r["started_at"] for r in seen] == sorted((r["started_at"] for r in seen), reverse=True)
    assert all(r["status"] == "succeeded" and r["workflow"] == "noop" for r in seen)


def test_filters_by_status_workflow_and_time(board: DashboardStack) -> None:
    prefix = unique("filter")
    _noop_runs(board, prefix, 2)
    with board.client() as client:
        done = client.get("/api/dashboard/runs", params={"q": prefix, "status": "succeeded"})
        assert len(done.json()["runs"]) == 2
        running = client.get("/api/dashboard/runs", params={"q": prefix, "status": "running"})
        assert running.json()["runs"] == []
        other = client.get("/api/dashboard/runs", params={"q": prefix, "workflow": "pause"})
        assert other.json()["runs"] == []
        future = client.get(
            "/api/dashboard/runs", params={"q": prefix, "since": "2999-01-01T00:00:00Z"}
        )
        assert future.json()["runs"] == []


def test_bad_queries_are_refused_with_what_to_do(board: DashboardStack) -> None:
    with board.client() as client:
        cases = {
            "/api/dashboard/runs?status=done": "status must be one of",
            "/api/dashboard/runs?cursor=not-a-cursor": "start again from the first page",
            "/api/dashboard/runs?since=yesterday": "ISO 8601",
            "/api/dashboard/workflows?days=0": "days must be from 1",
            "/api/dashboard/runs/no-such-run": "no run 'no-such-run'",
            "/api/dashboard/workflows/no-such-workflow": "no workflow 'no-such-workflow'",
            "/api/dashboard/runs/no-such-run/values/input": "no run",
            "/api/dashboard/runs/nul%00id": "cannot hold",
            "/api/dashboard/runs?q=nul%00": "cannot hold",
            "/api/dashboard/live?run=nul%00id": "cannot hold",
            "/api/dashboard/workflows/nul%00": "cannot hold",
        }
        for path, message in cases.items():
            answer = client.get(path)
            assert answer.status_code in (400, 404), (path, answer.text)
            assert message in answer.json()["error"]["message"], (path, answer.text)
        assert client.get("/api/dashboard/runs?limit=0").status_code == 400


def test_a_run_has_its_graph_steps_budgets_gate_and_timeline(board: DashboardStack) -> None:
    run_id = start_support_run(board)
    with board.client() as client:
        run = client.get(f"/api/dashboard/runs/{run_id}").json()
    assert run["status"] == "waiting"
    assert [n["id"] for n in run["graph"]] == [
        "classify", "research", "fetch_history", "draft", "approve", "send"
    ]  # fmt: skip
    assert {n["id"]: n["after"] for n in run["graph"]}["draft"] == ["research", "fetch_history"]
    assert run["steps"]["classify"]["model"] == "claude-haiku-4-5"
    assert run["steps"]["classify"]["status"] == "completed"
    assert run["steps"]["approve"]["status"] == "waiting"
    usd = next(b for b in run["budgets"] if b["kind"] == "usd")
    assert usd["limit"] == 2.0 and usd["left"] == round(2.0 - run["cost_usd"], 6)
    (gate,) = run["gates"]
    assert gate["step"] == "approve" and gate["assignee"] == "support_lead"
    assert "token" not in json.dumps(gate)  # the task token never leaves the server
    assert run["timeline"]["events"][0]["type"] == "ExecutionStarted"
    assert run["waiting_on"] == [
        {"step": "approve", "kind": "approval", "assignee": "support_lead"}
    ]


def test_values_come_on_demand_and_only_for_their_run(board: DashboardStack) -> None:
    run_id = start_support_run(board)
    with board.client() as client:
        value = client.get(f"/api/dashboard/runs/{run_id}/values/output", params={"step": "draft"})
        assert value.status_code == 200
        assert "refunded" in value.json()["text"]
        assert value.headers["x-switchyard-bytes"] == str(len(value.content))
        nothing = client.get(f"/api/dashboard/runs/{run_id}/values/output", params={"step": "x"})
        assert nothing.status_code == 404
        assert client.get(f"/api/dashboard/runs/{run_id}/values/secrets").status_code == 400
        other = client.get(f"/api/dashboard/runs/{run_id}/blobs", params={"key": "other/run/x"})
        assert other.status_code == 404
        assert "is not a value of run" in other.json()["error"]["message"]


def test_decisions_need_a_person_json_and_an_open_gate(board: DashboardStack) -> None:
    run_id = start_support_run(board)
    path = f"/api/dashboard/runs/{run_id}/steps/approve"
    with board.client() as client:
        nobody = client.post(f"{path}/approve", json={})
        assert nobody.status_code == 400
        assert "X-Switchyard-User" in nobody.json()["error"]["message"]
        form = client.post(
            f"{path}/approve", content="note=x", headers={"X-Switchyard-User": "ann",
                                                          "Content-Type": "text/plain"}
        )  # fmt: skip
        assert form.status_code == 400  # a cross-site form cannot decide
        wrong = client.post(
            f"/api/dashboard/runs/{run_id}/steps/draft/approve",
            json={},
            headers={"X-Switchyard-User": "ann"},
        )
        assert wrong.status_code == 409 and wrong.json()["error"]["code"] == "no_open_gate"
        done = client.post(
            f"{path}/reject", json={"note": "no"}, headers={"X-Switchyard-User": "ann"}
        )
        assert done.status_code == 200, done.text
        assert done.json() == {
            "run_id": run_id, "step": "approve", "decision": "rejected", "reviewer": "ann"
        }  # fmt: skip
        again = client.post(f"{path}/approve", json={}, headers={"X-Switchyard-User": "ann"})
        assert again.status_code == 409


def test_the_live_stream_carries_a_step_change_as_it_commits(board: DashboardStack) -> None:
    run_id = start_support_run(board)
    events: list[dict[str, Any]] = []
    subscribed = threading.Event()
    completed = threading.Event()

    def listen() -> None:
        with (
            board.client() as client,
            client.stream("GET", "/api/dashboard/live", params={"run": run_id}) as stream,
        ):
            for line in stream.iter_lines():
                if line.startswith(": listening"):
                    subscribed.set()
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    events.append(event)
                    if event.get("k") == "approve" and event.get("s") == "completed":
                        completed.set()
                        return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    assert subscribed.wait(10)
    assert board.dashboard.feed.listening.wait(10)
    with board.rest() as rest:
        sent = time.monotonic()
        assert approve(rest, run_id).status_code == 200
    assert completed.wait(10), events
    print(f"decision sent -> event on the stream: {(time.monotonic() - sent) * 1000:.0f} ms")
    assert all(e.get("e") is not None or e.get("r") == run_id for e in events)


def test_the_live_stream_of_an_unknown_run_is_refused(board: DashboardStack) -> None:
    with board.client() as client:
        answer = client.get("/api/dashboard/live", params={"run": "no-such-run"})
    assert answer.status_code == 404


def test_the_app_is_served_at_ui_and_the_root_goes_there(board: DashboardStack) -> None:
    with board.client() as client:
        root = client.get("/", follow_redirects=False)
        assert root.status_code == 307 and root.headers["location"] == "/ui/"
        page = client.get("/ui/runs/anything")
        assert page.status_code == 200 and '<div id="root">' in page.text
        asset = next((WEB_DIST / "assets").glob("index-*.js")).name
        cached = client.get(f"/ui/assets/{asset}")
        assert cached.status_code == 200 and "immutable" in cached.headers["cache-control"]
        assert client.get("/ui/assets/missing.js").status_code == 404
        assert client.get("/ui/../pyproject.toml").status_code in (200, 404)
        assert "[project]" not in client.get("/ui/..%2F..%2Fpyproject.toml").text
        assert client.get("/ui/nul%00byte").status_code == 200  # a page of the app, no error
        decided = client.post(
            "/api/dashboard/runs/nul%00/steps/x/approve",
            json={},
            headers={"X-Switchyard-User": "ann"},
        )
        assert decided.status_code == 400


def test_a_token_guards_the_data_api_by_header_or_cookie(board: DashboardStack) -> None:
    app = create_app(board.stack.server.context, token="s3cret")
    dashboard = mount_dashboard(app, board.stack.server.context, token="s3cret")
    with serve(app, dashboard) as url, httpx.Client(base_url=url) as client:
        refused = client.get("/api/dashboard/runs")
        assert refused.status_code == 401
        assert "SWITCHYARD_API_TOKEN" in refused.text and "s3cret" not in refused.text
        bearer = client.get("/api/dashboard/runs", headers={"Authorization": "Bearer s3cret"})
        assert bearer.status_code == 200
        client.cookies.set("switchyard_token", "s3cret")
        assert client.get("/api/dashboard/runs").status_code == 200
        assert client.get("/ui/").status_code == 200  # the app itself holds no data
        assert client.get("/runs").status_code == 401  # the REST API keeps its own check
