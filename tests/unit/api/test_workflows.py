"""The workflows directory: installed at startup, listed with their inputs; a file that does not
validate is reported with its diagnostics and skipped."""

from __future__ import annotations

import httpx

from tests.unit.api.support import Stack


def test_the_valid_workflows_of_the_directory_are_listed_with_their_inputs(
    client: httpx.Client,
) -> None:
    answer = client.get("/workflows")

    assert answer.status_code == 200
    workflows = {w["name"]: w for w in answer.json()["workflows"]}
    assert set(workflows) == {"budget-pause", "customer-support", "long-refine", "noop", "pause"}
    support = workflows["customer-support"]
    assert support["version"] == 1
    assert support["inputs"]["tier"] == {
        "type": "string",
        "enum": ["free", "pro", "enterprise"],
        "default": "free",
    }
    assert support["links"] == {"runs": "/workflows/customer-support/runs"}
    assert support["file"] == "customer-support.yaml"


def test_a_file_that_does_not_validate_is_reported_and_skipped(stack: Stack) -> None:
    (report,) = stack.reports
    assert "broken.yaml" in report
    assert "error[unknown_step]" in report and "nowhere" in report


def test_one_workflow_by_name_and_version(client: httpx.Client) -> None:
    assert client.get("/workflows/noop").json()["version"] == 1
    assert client.get("/workflows/noop", params={"version": 1}).status_code == 200
    missing = client.get("/workflows/broken")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "workflow_not_found"
    assert client.get("/workflows/noop", params={"version": "one"}).status_code == 400
