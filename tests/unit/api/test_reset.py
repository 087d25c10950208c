"""POST /runs/{run_id}/reset on the REST API (`switchyard dev`): a reset onto a newer version
replays the charge (a line in a file, not written again) and runs notify afresh; both runs show
the link; and the refusals: 404 no run, step or version, 400 no step given, 409 a run that
has not ended unless `cancel` (the paused run is then cancelled)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.pg import fresh_database
from tests.unit.api.support import Stack, start, start_stack, wait_for

WORKFLOWS = Path(__file__).parents[2] / "e2e" / "workflows" / "reset"
FINAL = {"succeeded", "failed", "cancelled", "timed_out"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    files = {p.name: p.read_text() for p in WORKFLOWS.glob("*.yaml")}
    root = tmp_path_factory.mktemp("api")
    with fresh_database() as conninfo, start_stack(conninfo, root, workflows=files) as running:
        yield running


@pytest.fixture
def client(stack: Stack) -> Iterator[httpx.Client]:
    with stack.client() as http:
        yield http


def test_a_reset_onto_a_newer_version_replays_the_charge_and_links_both_runs(
    client: httpx.Client, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    started = client.post("/workflows/reset-ledger/runs?version=1", json={"ledger": str(ledger)})
    assert started.status_code == 201, started.text
    original = started.json()["run_id"]
    assert wait_for(client, original, FINAL)["status"] == "succeeded"

    reset = client.post(f"/runs/{original}/reset", json={"to": "notify", "version": 2})
    assert reset.status_code == 201, reset.text
    answer = reset.json()
    assert reset.headers["Location"] == f"/runs/{answer['run_id']}"
    assert (answer["reused"], answer["fresh"], answer["version"]) == (["charge"], ["notify"], 2)
    assert answer["links"] == {
        "run": f"/runs/{answer['run_id']}",
        "reset_from": f"/runs/{original}",
    }
    again = wait_for(client, answer["run_id"], FINAL)
    assert again["status"] == "succeeded" and again["version"] == 2
    assert again["reset_from"] == {
        "run_id": original, "to": "notify", "links": {"run": f"/runs/{original}"},
    }  # fmt: skip
    lines = ledger.read_text().splitlines()
    assert lines == [
        f"charge {original}",
        f"notify v1 {original} after charge line 1",
        f"notify v2 {answer['run_id']} after charge line 1",
    ]
    shown = client.get(f"/runs/{original}").json()
    assert shown["status"] == "succeeded"
    assert [r["run_id"] for r in shown["resets"]] == [answer["run_id"]]


def test_a_reset_is_refused_with_the_reason(client: httpx.Client, tmp_path: Path) -> None:
    started = client.post("/workflows/reset-ledger/runs", json={"ledger": str(tmp_path / "l")})
    run_id = started.json()["run_id"]
    wait_for(client, run_id, FINAL)
    cases = [
        ("/runs/no-such-run/reset", {"to": "notify"}, 404, "run_not_found"),
        (f"/runs/{run_id}/reset", {"to": "nope"}, 404, "step_not_found"),
        (f"/runs/{run_id}/reset", {"to": "notify", "version": 7}, 404, "workflow_not_found"),
        (f"/runs/{run_id}/reset", {}, 400, "bad_request"),
        (f"/runs/{run_id}/reset", {"to": "notify", "version": 0}, 400, "bad_request"),
        (f"/runs/{run_id}/reset", {"to": "Not A Step"}, 400, "bad_request"),
    ]
    for path, body, status, code in cases:
        answer = client.post(path, json=body)
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
    unknown = client.post(f"/runs/{run_id}/reset", json={"to": "nope"}).json()["error"]
    assert "its steps: charge, notify" in unknown["message"]
    missing = client.post(f"/runs/{run_id}/reset", json={}).json()["error"]["message"]
    assert missing == "'to' is required"
    zero = client.post(f"/runs/{run_id}/reset", json={"to": "notify", "version": 0})
    assert zero.json()["error"]["message"] == "'version' must be at least 1, not 0"


def test_a_run_that_has_not_ended_is_reset_only_with_cancel(
    stack: Stack, client: httpx.Client
) -> None:
    run_id = start(client, stack, "pause", {}).json()["run_id"]
    wait_for(client, run_id, {"paused"})
    refused = client.post(f"/runs/{run_id}/reset", json={"to": "shaky"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "run_not_ended"
    assert "cancel it first" in refused.json()["error"]["message"]

    reset = client.post(f"/runs/{run_id}/reset", json={"to": "next", "cancel": True})
    assert reset.status_code == 201, reset.text
    assert reset.json()["cancelled_original"] is True
    assert wait_for(client, run_id, FINAL)["status"] == "cancelled"
    assert reset.json()["reused"] == ["shaky"]
