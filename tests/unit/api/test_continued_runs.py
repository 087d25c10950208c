"""GET /runs/{id} of a run whose loop continued as new: one run with its segments, whichever
segment's id is asked for, its cost and tokens the segments' together."""

from __future__ import annotations

import httpx
import pytest

from tests.unit.api.support import Stack, start, wait_for


def test_a_continued_run_is_one_run_with_segments(stack: Stack, client: httpx.Client) -> None:
    started = start(client, stack, "long-refine", {})
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]

    done = wait_for(client, run_id, {"succeeded"})
    assert done["run_id"] == run_id
    assert done["output"] == {"refine": {"score": 0.9, "iterations": 5}}
    segments = done["segments"]
    assert [s["run_id"] for s in segments] == [run_id, f"{run_id}-2", f"{run_id}-3"]
    assert [s["segment"] for s in segments] == [1, 2, 3]
    assert [s["status"] for s in segments] == ["continued", "continued", "succeeded"]
    assert done["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in segments))
    assert done["tokens"]["input"] == sum(s["input_tokens"] for s in segments)
    assert done["steps"]["refine"]["status"] == "completed"

    middle = client.get(f"/runs/{run_id}-2")
    assert middle.status_code == 200, middle.text
    assert middle.json() == done

    listed = client.get("/runs", params={"status": "continued", "workflow": "long-refine"})
    assert listed.status_code == 200, listed.text
    rows = {run["run_id"]: run for run in listed.json()["runs"]}
    assert {r: (row["segment"], row["logical_run_id"]) for r, row in rows.items()} == {
        run_id: (1, run_id),
        f"{run_id}-2": (2, run_id),
    }
