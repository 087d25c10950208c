"""`switchyard resume` and `switchyard cancel` (through switchyard.local.run_actions, as the REST
API): a run the budget refused at its first call resumes with a raised budget; a run that has
ended cannot be cancelled; a paused run is cancelled."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import cli_environment, switchyard

WORKFLOW = """\
switchyard: 1
name: NAME
version: 1
budget: {max_cost_usd: 0.00005}
defaults: {model: claude-haiku-4-5}
steps:
  summarize: {type: agent, prompt: "Summarize the quarter"}
"""
SCRIPT = "summarize:\n  - {text: Revenue up 4%.}\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with cli_environment(tmp_path_factory.mktemp("home"), USER="tester") as environment:
        yield environment


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A workflow of its own per test: once a step has cost history, its estimate is that."""
    name = f"tight-budget-{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.yaml").write_text(WORKFLOW.replace("NAME", name))
    (tmp_path / "script.yaml").write_text(SCRIPT)
    return tmp_path / f"{name}.yaml", tmp_path / "script.yaml"


def _paused_run(env: dict[str, str], files: tuple[Path, Path]) -> str:
    workflow, script = files
    done = switchyard(env, "run", str(workflow), "--llm-script", str(script), "--json")
    assert done.returncode == 3, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "paused" and run["waiting_for"][0]["kind"] == "budget"
    return str(run["run_id"])


def _status(env: dict[str, str], run_id: str, until: str) -> str:
    status = ""
    for _ in range(100):
        status = json.loads(switchyard(env, "runs", "show", run_id, "--json").stdout)["status"]
        if status == until:
            break
    return status


def test_a_run_refused_at_its_first_call_resumes_with_a_raised_budget(
    env: dict[str, str], files: tuple[Path, Path]
) -> None:
    run_id = _paused_run(env, files)

    resumed = switchyard(env, "resume", run_id, "--raise-budget", "1")

    assert resumed.returncode == 0, resumed.stderr
    assert f"raised run:{run_id} by $1.0" in resumed.stderr
    assert _status(env, run_id, "succeeded") == "succeeded"
    again = switchyard(env, "cancel", run_id)
    assert again.returncode == 1 and "has already ended (succeeded)" in again.stderr


def test_a_paused_run_is_cancelled(env: dict[str, str], files: tuple[Path, Path]) -> None:
    run_id = _paused_run(env, files)

    cancelled = switchyard(env, "cancel", run_id, "--note", "not this quarter")

    assert cancelled.returncode == 0, cancelled.stderr
    assert _status(env, run_id, "cancelled") == "cancelled"
    shown = json.loads(switchyard(env, "runs", "show", run_id, "--json").stdout)
    assert shown["waiting_for"] == []
    assert switchyard(env, "resume", run_id).returncode == 1
