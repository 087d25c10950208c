"""`switchyard run` and friends end to end on a real database: the example runs, exit codes,
the --json shape, gates decided by flag, by command and left waiting."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.cli import cli_environment, switchyard
from tests.conftest import WORKFLOWS

SCRIPT = WORKFLOWS / "scripts" / "customer-support.yaml"
INPUT = WORKFLOWS / "inputs" / "customer-support.json"
EXAMPLE = WORKFLOWS / "customer-support.yaml"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with cli_environment(tmp_path_factory.mktemp("home"), USER="tester") as environment:
        yield environment


def run_example(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return switchyard(
        env,
        "run",
        str(EXAMPLE),
        "--input",
        f"@{INPUT}",
        "--llm-script",
        str(SCRIPT),
        "--json",
        *extra,
    )


def test_the_example_runs_to_the_end_with_an_approval(env: dict[str, str]) -> None:
    done = run_example(env, "--approve", "approve=looks right")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "succeeded"
    assert run["output"] == {"send": {"message_id": "local-0001"}}
    assert set(run["steps"]) == {
        "classify",
        "research",
        "fetch_history",
        "draft",
        "approve",
        "send",
    }
    assert run["steps"]["approve"]["status"] == "completed"
    assert "approved by tester: looks right" in done.stderr
    assert "scripted" in done.stderr


def test_per_step_tokens_and_cost_sum_to_the_run_totals(env: dict[str, str]) -> None:
    run = json.loads(run_example(env, "--approve", "approve").stdout)
    steps = run["steps"].values()
    assert sum(s["tokens"]["input"] for s in steps) == run["tokens"]["input"] == 212 + 1840 + 980
    assert sum(s["tokens"]["output"] for s in steps) == run["tokens"]["output"]
    assert round(sum(s["cost_usd"] for s in steps), 6) == run["cost_usd"] > 0


def test_a_rejected_gate_fails_the_run_with_exit_1(env: dict[str, str]) -> None:
    done = run_example(env, "--reject", "approve=wrong tone")
    assert done.returncode == 1, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "failed"
    assert run["error"]["type"] == "rejected" and run["error"]["step"] == "approve"
    assert run["steps"]["send"]["status"] if "send" in run["steps"] else True


def test_a_gate_with_no_one_to_answer_leaves_the_run_waiting_with_exit_3(
    env: dict[str, str],
) -> None:
    done = run_example(env)
    assert done.returncode == 3, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "waiting"
    (waiting,) = run["waiting_for"]
    assert waiting["step"] == "approve" and waiting["assignee"] == "support_lead"
    assert waiting["approve_url"].startswith("http://localhost:8080/approvals/")
    status = switchyard(env, "engine", "status")
    assert status.returncode == 0 and "engine running" in status.stdout
    approved = switchyard(env, "approve", run["run_id"], "approve", "--note", "ok")
    assert approved.returncode == 0, approved.stderr
    shown = {}
    for _ in range(100):
        shown = json.loads(switchyard(env, "runs", "show", run["run_id"], "--json").stdout)
        if shown["status"] != "waiting":
            break
    assert shown["status"] == "succeeded"
    again = switchyard(env, "approve", run["run_id"], "approve")
    assert again.returncode == 1 and "no open" in again.stderr


def test_runs_list_shows_the_runs(env: dict[str, str]) -> None:
    listed = switchyard(env, "runs", "list", "--json")
    assert listed.returncode == 0
    runs = json.loads(listed.stdout)
    assert runs and all(r["workflow"] == "customer-support" for r in runs)
    assert switchyard(env, "runs", "show", "no-such-run").returncode == 1


def test_invalid_input_exits_2_before_anything_runs(env: dict[str, str]) -> None:
    done = switchyard(
        env, "run", str(EXAMPLE), "--input", '{"ticket_id": 7}', "--llm-script", str(SCRIPT)
    )
    assert done.returncode == 2
    assert "invalid run input" in done.stderr and "is required" in done.stderr
    bad_json = switchyard(env, "run", str(EXAMPLE), "--input", "{oops", "--llm-script", str(SCRIPT))
    assert bad_json.returncode == 2 and "not JSON" in bad_json.stderr


def test_without_credentials_or_a_script_agent_steps_are_refused(env: dict[str, str]) -> None:
    done = switchyard(env, "run", str(EXAMPLE), "--input", f"@{INPUT}")
    assert done.returncode == 2
    assert "ANTHROPIC_API_KEY" in done.stderr and "--llm-script" in done.stderr


def test_an_invalid_workflow_exits_1(env: dict[str, str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "switchyard: 1\nname: broken\nversion: 1\nsteps:\n  a: {type: tool, tool: nope}\n"
    )
    done = switchyard(env, "run", str(broken))
    assert done.returncode == 1 and "unknown_tool" in done.stderr


def test_a_run_started_with_a_priority_carries_it_to_its_steps(env: dict[str, str]) -> None:
    done = run_example(env, "--approve", "approve=ok", "--priority", "high")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        row = conn.execute(
            "SELECT e.input, count(h.*) FROM sfn_executions e"
            " JOIN sfn_history h ON h.execution_id = e.id"
            " WHERE e.name = %s AND h.type = 'TaskScheduled'"
            " AND strpos(h.details::text, %s) > 0 GROUP BY e.input",
            (run_id, '\\"priority\\":\\"high\\"'),  # in the parameters, a JSON string
        ).fetchone()
    assert row is not None
    data, events = row
    assert data["switchyard:priority"] == "high"
    assert events > 1  # run_start put it in the run's context, which the steps' payloads carry
