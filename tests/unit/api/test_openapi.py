"""The REST API against its own `/openapi.json`, fuzzed by schemathesis with every built-in check
(server errors, status codes, content types, response schemas and headers, positive data
accepted, negative data rejected, auth, unsupported methods) in its coverage, fuzzing and
stateful phases, on this package's real server and database. Bounded: a few examples per
operation, deterministic, so it runs in well under a minute and finds the same things each time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.unit.api.support import Stack

EXAMPLES = 8
INSTALLED = ("budget-pause", "customer-support", "long-refine", "noop", "pause")


def test_the_document_is_openapi_3_1_with_a_path_per_installed_workflow(
    client: httpx.Client,
) -> None:
    document = client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) == {
        "/healthz",
        "/workflows",
        "/workflows/{name}",
        "/runs",
        "/runs/{run_id}",
        "/runs/{run_id}/cancel",
        "/runs/{run_id}/reset",
        "/runs/{run_id}/resume",
        "/runs/{run_id}/steps/{step}/approve",
        "/runs/{run_id}/steps/{step}/reject",
        *(f"/workflows/{name}/runs" for name in INSTALLED),
    }
    start = document["paths"]["/workflows/customer-support/runs"]["post"]
    body = start["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["body", "customer_email", "ticket_id"]
    assert body["properties"]["tier"]["enum"] == ["free", "pro", "enterprise"]
    assert "422" not in start["responses"] and "400" in start["responses"]


def test_schemathesis_finds_nothing_with_every_check(stack: Stack, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "schemathesis"),
            "run",
            f"{stack.url}/openapi.json",
            "--checks=all",
            f"--max-examples={EXAMPLES}",
            "--generation-deterministic",
            "--phases=coverage,fuzzing,stateful",
            f"--report-dir={tmp_path}",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,  # its cache (.schemathesis/) goes there, not into the repository
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
