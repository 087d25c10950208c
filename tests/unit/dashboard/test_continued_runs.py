"""The dashboard's run page data for a run whose loop continued as new: one run, its
segments listed, its totals theirs, its steps from every segment."""

from __future__ import annotations

import pytest

from tests.unit.api.support import start, wait_for
from tests.unit.dashboard.support import DashboardStack


def test_the_run_page_shows_one_run_with_its_segments(board: DashboardStack) -> None:
    with board.rest() as rest:
        answer = start(rest, board.stack, "long-refine", {})
        assert answer.status_code == 201, answer.text
        run_id = answer.json()["run_id"]
        wait_for(rest, run_id, {"succeeded"})
    with board.client() as client:
        for asked in (run_id, f"{run_id}-3"):
            page = client.get(f"/api/dashboard/runs/{asked}")
            assert page.status_code == 200, page.text
            run = page.json()
            assert run["run_id"] == run_id and run["status"] == "succeeded"
            segments = run["segments"]
            assert [s["status"] for s in segments] == ["continued", "continued", "succeeded"]
            assert run["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in segments))
            assert run["tokens"]["input"] == sum(s["input_tokens"] for s in segments)
            assert run["execution_arn"] == segments[-1]["execution_arn"]
            assert run["steps"]["refine"]["status"] == "completed"
        plain = client.get("/api/dashboard/runs", params={"q": run_id}).json()["runs"]
        assert {r["run_id"]: r["segment"] for r in plain} == {
            run_id: 1,
            f"{run_id}-2": 2,
            f"{run_id}-3": 3,
        }
        assert {r["logical_run_id"] for r in plain} == {run_id}
