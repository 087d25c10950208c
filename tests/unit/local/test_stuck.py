"""Stuck runs on a real engine: a run whose step function hangs is listed (and its parent, when it
is a sub-workflow), while runs waiting on a gate, a retry's backoff or a Wait state are not;
through `stuck_runs`, `GET /runs?stuck=true` and `switchyard runs list --stuck`."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from playwright.sync_api import expect

from switchyard.api.app import create_app
from switchyard.cli.main import main
from switchyard.constants import DEFAULT_STUCK_AFTER_SECONDS, STUCK_AFTER_ENV
from switchyard.dashboard import mount_dashboard
from switchyard.dashboard.runs import RunFilter, runs_page
from switchyard.local.stuck import StuckAfterError, StuckRun, stuck_after, stuck_runs
from tests import held
from tests.cli import switchyard
from tests.conftest import FIXTURES
from tests.pg import fresh_database
from tests.unit.api.support import Stack, start_stack, wait_for
from tests.unit.dashboard.browser import chromium
from tests.unit.dashboard.support import WEB_DIST, serve

OPERATIONS = FIXTURES / "operations"
AFTER = 1
"""The threshold of these tests, in seconds."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workflows = {p.name: p.read_text() for p in OPERATIONS.glob("*.yaml")}
    with (
        fresh_database() as conninfo,
        start_stack(conninfo, tmp_path_factory.mktemp("stuck"), workflows=workflows) as running,
    ):
        yield running


@pytest.fixture(scope="module")
def client(stack: Stack) -> Iterator[httpx.Client]:
    with stack.client() as http:
        yield http


@pytest.fixture(scope="module")
def runs(stack: Stack, client: httpx.Client) -> Iterator[dict[str, str]]:
    """One run of each kind, each parked where it waits, and every one idle for longer than
    `AFTER`: workflow (or `nest.child`) -> run id."""
    keys = {name: uuid.uuid4().hex[:12] for name in ("hold", "nest", "mixed")}
    started: dict[str, str] = {}
    for workflow in ("hold", "gated", "pausing", "backoff", "linear", "nest", "mixed"):
        body = {"key": keys[workflow]} if workflow in keys else {}
        answer = client.post(f"/workflows/{workflow}/runs", json=body)
        assert answer.status_code == 201, answer.text
        started[workflow] = answer.json()["run_id"]
    try:
        for key in keys.values():
            _until(lambda key=key: held.holding(key), f"held call {key}")  # type: ignore[misc]
        wait_for(client, started["gated"], {"waiting"})
        wait_for(client, started["pausing"], {"paused"})
        for workflow in ("backoff", "linear", "mixed"):
            _until(lambda w=workflow: _has_timer(stack, started[w]), f"{workflow}'s timer")  # type: ignore[misc]
        started["nest.child"] = _child(stack, started["nest"])
        time.sleep(AFTER + 0.3)
        yield started
    finally:
        for key in keys.values():
            held.release(key)


def _until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.02)


def _connect(stack: Stack) -> psycopg.Connection[Any]:
    return psycopg.connect(stack.engine.conninfo, autocommit=True)


def _has_timer(stack: Stack, run_id: str) -> bool:
    with _connect(stack) as conn:
        row = conn.execute(
            "SELECT count(*) FROM sfn_timers m JOIN workflow_runs r"
            " ON r.execution_id = m.execution_id WHERE r.run_id = %s",
            (run_id,),
        ).fetchone()
    return bool(row and row[0])


def _child(stack: Stack, run_id: str) -> str:
    with _connect(stack) as conn:
        row = conn.execute(
            "SELECT c.run_id FROM workflow_runs c JOIN workflow_runs p"
            " ON p.execution_id = c.parent_execution_id WHERE p.run_id = %s",
            (run_id,),
        ).fetchone()
    assert row is not None
    return str(row[0])


def _stuck(stack: Stack, **options: Any) -> dict[str, StuckRun]:
    with _connect(stack) as conn:
        return {run.run["run_id"]: run for run in stuck_runs(conn, **options)}


def test_a_hanging_step_is_stuck_and_gates_backoffs_and_waits_are_not(
    stack: Stack, runs: dict[str, str]
) -> None:
    found = _stuck(stack, after_seconds=AFTER)

    expected = {runs[name] for name in ("hold", "nest", "nest.child", "mixed")}
    assert set(found) == expected
    hold = found[runs["hold"]]
    assert [(w.kind, w.step) for w in hold.waiting_on] == [("task", "hold")]
    assert hold.idle_seconds >= AFTER
    assert hold.run["workflow"] == "hold" and hold.run["status"] == "running"
    # One branch waits an hour for its retry; the other's hanging function is what is stuck.
    assert [(w.kind, w.step) for w in found[runs["mixed"]].waiting_on] == [("task", "held")]


def test_a_stuck_sub_workflow_lists_its_parent_as_stuck_on_it(
    stack: Stack, runs: dict[str, str]
) -> None:
    found = _stuck(stack, after_seconds=AFTER)

    (parent_wait,) = found[runs["nest"]].waiting_on
    assert parent_wait.kind == "sub_workflow"
    assert parent_wait.step == "child"
    assert parent_wait.run_id == runs["nest.child"]
    assert [w.kind for w in found[runs["nest.child"]].waiting_on] == ["task"]


def test_nothing_is_stuck_under_a_longer_threshold_and_filters_apply(
    stack: Stack, runs: dict[str, str]
) -> None:
    assert _stuck(stack, after_seconds=3600) == {}
    assert set(_stuck(stack, after_seconds=AFTER, workflow="hold")) == {
        runs["hold"],
        runs["nest.child"],
    }
    assert _stuck(stack, after_seconds=AFTER, status="paused") == {}
    assert len(_stuck(stack, after_seconds=AFTER, limit=1)) == 1


def test_the_rest_api_lists_stuck_runs(
    stack: Stack, client: httpx.Client, runs: dict[str, str]
) -> None:
    answer = client.get("/runs", params={"stuck": "true", "stuck_after": str(AFTER)})

    assert answer.status_code == 200, answer.text
    listed = {run["run_id"]: run for run in answer.json()["runs"]}
    assert set(listed) == {runs[name] for name in ("hold", "nest", "nest.child", "mixed")}
    hold = listed[runs["hold"]]
    assert hold["links"] == {"self": f"/runs/{runs['hold']}"}
    assert hold["stuck"]["waiting_on"][0]["kind"] == "task"
    assert hold["stuck"]["idle_seconds"] >= AFTER
    # stuck_after alone implies stuck; the default threshold (5 minutes) lists none of them
    implied = client.get("/runs", params={"stuck_after": "1s", "workflow": "nest"}).json()
    assert [run["run_id"] for run in implied["runs"]] == [runs["nest"]]
    assert client.get("/runs", params={"stuck": "true"}).json() == {"runs": []}
    plain = client.get("/runs", params={"workflow": "hold"}).json()["runs"]
    assert plain and all("stuck" not in run for run in plain)
    unstuck = client.get("/runs", params={"workflow": "hold", "stuck": "false", "stuck_after": "1"})
    assert unstuck.json()["runs"] == plain  # stuck=false: the plain list, threshold or not
    blank = client.get("/runs", params={"workflow": "hold", "stuck_after": ""})
    assert blank.json()["runs"] == plain


def test_bad_stuck_parameters_are_400(client: httpx.Client) -> None:
    for params in (
        {"stuck": "maybe"},
        {"stuck_after": "0"},
        {"stuck_after": "soon"},
        {"stuck_after": "-5"},
        {"stuck_after": "1000d"},
        {"stuck_after": "3930401656409s"},
    ):
        answer = client.get("/runs", params=params)
        assert answer.status_code == 400, (params, answer.text)
        assert answer.json()["error"]["message"]


def test_the_openapi_document_has_the_stuck_parameters(client: httpx.Client) -> None:
    document = client.get("/openapi.json").json()
    parameters = {p["name"] for p in document["paths"]["/runs"]["get"]["parameters"]}
    assert {"stuck", "stuck_after"} <= parameters
    summary = document["components"]["schemas"]["RunSummary"]["properties"]
    assert "stuck" in summary
    assert "waiting_on" in document["components"]["schemas"]["Stuck"]["properties"]


@pytest.mark.slow
def test_the_cli_lists_stuck_runs(stack: Stack, runs: dict[str, str], tmp_path: Path) -> None:
    env = {**_environment(stack, tmp_path), STUCK_AFTER_ENV: "1h"}

    listed = switchyard(env, "runs", "list", "--stuck-after", str(AFTER), "--json")
    text = switchyard(env, "runs", "list", "--stuck", "--stuck-after", "1s")
    by_default = switchyard(env, "runs", "list", "--stuck")  # the environment's hour

    assert listed.returncode == 0, listed.stderr
    entries = {run["run_id"]: run for run in json.loads(listed.stdout)}
    assert runs["hold"] in entries and runs["gated"] not in entries
    assert entries[runs["nest"]]["stuck"]["waiting_on"][0]["run_id"] == runs["nest.child"]
    lines = {line.split()[0]: line for line in text.stdout.splitlines()[1:]}
    assert "task hold" in lines[runs["hold"]]
    assert f"sub-workflow child (run {runs['nest.child']})" in lines[runs["nest"]]
    assert by_default.stdout.strip() == "no stuck runs (threshold 3600 s)"


def test_a_bad_threshold_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "list", "--stuck-after", "soon"]) == 2
    assert "not a duration of at least one second" in capsys.readouterr().err


def test_a_released_run_ends_and_is_no_longer_stuck(
    stack: Stack, client: httpx.Client, runs: dict[str, str]
) -> None:
    key = uuid.uuid4().hex[:12]
    run_id = client.post("/workflows/hold/runs", json={"key": key}).json()["run_id"]
    _until(lambda: held.holding(key), "the held call")
    time.sleep(AFTER + 0.3)
    assert run_id in _stuck(stack, after_seconds=AFTER)

    held.release(key)

    wait_for(client, run_id, {"succeeded"})
    assert run_id not in _stuck(stack, after_seconds=AFTER)


def _environment(stack: Stack, home: Path) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": stack.engine.conninfo, "SWITCHYARD_HOME": str(home)}


def test_the_threshold_comes_from_the_argument_the_environment_or_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(STUCK_AFTER_ENV, raising=False)
    assert stuck_after() == DEFAULT_STUCK_AFTER_SECONDS == 300
    monkeypatch.setenv(STUCK_AFTER_ENV, "10m")
    assert stuck_after() == 600
    assert stuck_after("90") == 90 and stuck_after("2h") == 7200 and stuck_after(5) == 5
    assert stuck_after("999d") == 999 * 86400
    for bad in ("0", "soon", "-1", "1.5", "1000d", str(10**15)):
        with pytest.raises(StuckAfterError, match="at least one second"):
            stuck_after(bad)
    monkeypatch.setenv(STUCK_AFTER_ENV, "later")
    with pytest.raises(StuckAfterError, match=f"{STUCK_AFTER_ENV}='later'"):
        stuck_after()


def test_the_dashboard_runs_page_marks_stuck_runs(
    stack: Stack, runs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STUCK_AFTER_ENV, str(AFTER))
    with _connect(stack) as conn:
        rows = {
            row["run_id"]: row for row in runs_page(conn, RunFilter(limit=200), stuck=True)["runs"]
        }
        on_aws = runs_page(conn, RunFilter(limit=200))["runs"]  # Aurora has no engine tables

    assert rows[runs["hold"]]["stuck"]["waiting_on"][0]["kind"] == "task"
    assert rows[runs["nest"]]["stuck"]["waiting_on"][0]["run_id"] == runs["nest.child"]
    for name in ("gated", "pausing", "backoff", "linear"):
        assert rows[runs[name]]["stuck"] is None
    assert on_aws and all(row["stuck"] is None for row in on_aws)


@pytest.mark.slow
def test_the_dashboard_shows_a_stuck_chip_on_the_row(
    stack: Stack, runs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STUCK_AFTER_ENV, str(AFTER))
    app = create_app(stack.server.context)
    dashboard = mount_dashboard(app, stack.server.context, web_dir=WEB_DIST)
    with serve(app, dashboard) as url, chromium() as browser:
        page = browser.new_page(base_url=url)
        page.goto("/ui/")
        hold = page.locator(f'[data-run-id="{runs["hold"]}"]')
        expect(hold).to_have_attribute("data-run-stuck", "true")
        expect(hold.locator(".chip.stuck")).to_contain_text("task hold")
        gated = page.locator(f'[data-run-id="{runs["gated"]}"]')
        expect(gated).to_have_attribute("data-run-status", "waiting")
        expect(gated).not_to_have_attribute("data-run-stuck", "true")
        expect(gated.locator(".chip.stuck")).to_have_count(0)
