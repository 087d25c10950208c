"""An agent whose tool loop continues as new, through `switchyard run` with the real agent
runtime (a scripted model, a real Python tool) on the local engine: its turns spread over
segments, each segment's summary starting the next one's conversation, and to people one run
whose output is the agent's answer and whose cost is the segments' together."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli import cli_environment, switchyard
from tests.unit.cli.test_continue_as_new import _ledger

REPO = Path(__file__).resolve().parents[3]

WORKFLOW = """\
switchyard: 1
name: deep-research-VERSION
version: 1
budget: {max_cost_usd: 1.00, on_exceeded: fail}
defaults: {model: claude-haiku-4-5}
inputs: {topic: {type: string}}
tools:
  search:
    description: Search the notes.
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
    kind: python
    config: {function: "tests.unit.cli.test_agent_continue_as_new:search"}
    side_effect: none
steps:
  research:
    type: agent
    tools: [search]
    max_turns: MAX_TURNS
    continue_as_new: {after: 2}
    budget: {max_cost_usd: STEP_LIMIT}
    prompt: "Research {{ inputs.topic }}"
  publish: {type: agent, after: [research], prompt: "publish {{ steps.research.output.text }}"}
"""
USAGE = "input_tokens: 1000, output_tokens: 100"
SCRIPT = f"""\
research:
  - {{tool_use: [{{name: search, input: {{q: one}}}}], {USAGE}}}
  - {{tool_use: [{{name: search, input: {{q: two}}}}], {USAGE}}}
  - {{text: "SUMMARY-A: one and two searched", {USAGE}}}
  - {{tool_use: [{{name: search, input: {{q: three}}}}], {USAGE}}}
  - {{tool_use: [{{name: search, input: {{q: four}}}}], {USAGE}}}
  - {{text: "SUMMARY-B: four searches done", {USAGE}}}
  - {{tool_use: [{{name: search, input: {{q: five}}}}], {USAGE}}}
  - {{text: "anvils are heavy", {USAGE}}}
publish:
  - {{text: "published", {USAGE}}}
"""
"""One entry per model call of the agent over all its segments: five tool turns and its answer
take three segments of two turns each, the first two ending in a summary (eight calls)."""


def search(q: str) -> dict[str, Any]:
    return {"q": q, "hits": 1}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    # The engine the CLI starts imports the tool from the repository's root, which a console
    # script does not put on sys.path by itself.
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    with cli_environment(tmp_path_factory.mktemp("home"), PYTHONPATH=path) as environment:
        yield environment


def _run(
    env: dict[str, str], tmp_path: Path, version: str, max_turns: int, step_limit: str = "1.00"
) -> dict[str, Any]:
    text = WORKFLOW.replace("VERSION", version).replace("MAX_TURNS", str(max_turns))
    text = text.replace("STEP_LIMIT", step_limit)
    (tmp_path / "agent.yaml").write_text(text)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    done = switchyard(
        env, "run", str(tmp_path / "agent.yaml"), "--llm-script", str(tmp_path / "script.yaml"),
        "--input", json.dumps({"topic": "anvils"}), "--json",
    )  # fmt: skip
    assert done.stdout, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def _segment_outputs(env: dict[str, str], run_id: str) -> list[tuple[str, Any]]:
    """The agent's calls as the run records show them: (segment, output) in segment order."""
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        rows = conn.execute(
            "SELECT r.run_id, t.item, t.output FROM task_runs t "
            "JOIN workflow_runs r ON r.execution_id = t.execution_id "
            "WHERE (r.run_id = %s OR r.logical_run_id = %s) AND t.step_id = 'research' "
            "AND t.item <> '' ORDER BY r.segment, t.item",
            (run_id, run_id),
        ).fetchall()
    return [(f"{name}{item}", output) for name, item, output in rows]


def _ended(env: dict[str, str], run_id: str) -> dict[str, Any]:
    """`runs show --json` of the run once it and each of its segments have ended (the run
    records of the last segment may still be catching up when `run` returns)."""
    deadline = time.monotonic() + 60
    while True:
        data: dict[str, Any] = json.loads(switchyard(env, "runs", "show", run_id, "--json").stdout)
        statuses = {data["status"], *(s["status"] for s in data.get("segments", []))}
        if not statuses & {"running", "waiting"} or time.monotonic() > deadline:
            return data
        time.sleep(0.2)


def test_an_agent_goes_on_in_segments_and_is_one_run(env: dict[str, str], tmp_path: Path) -> None:
    shown = _ended(env, _run(env, tmp_path, "a", 20)["run_id"])
    assert shown["status"] == "succeeded", shown
    run_id = shown["run_id"]
    # downstream sees the agent's answer, not a segment's summary
    assert shown["steps"]["research"]["output"] == {"text": "anvils are heavy"}
    assert shown["output"] == {"publish": {"text": "published"}}
    segments = shown["segments"]
    assert [s["run_id"] for s in segments] == [run_id, f"{run_id}-2", f"{run_id}-3"]
    assert [s["status"] for s in segments] == ["continued", "continued", "succeeded"]
    total = sum(Decimal(str(s["cost_usd"])) for s in segments)
    assert total > 0 and Decimal(str(shown["cost_usd"])) == total
    # eight model calls of the agent, one of publish; the ledger counted what the runs show
    assert shown["tokens"] == {"input": 9000, "output": 900}
    assert _ledger(env, run_id) == total
    # each segment's call is one item of the step; the first two handed on their summary
    assert _segment_outputs(env, run_id) == [
        (
            f"{run_id}#1",
            {"continued": True, "summary": "SUMMARY-A: one and two searched", "turns": 3},
        ),
        (
            f"{run_id}-2#2",
            {"continued": True, "summary": "SUMMARY-B: four searches done", "turns": 6},
        ),
        (f"{run_id}-3#3", {"text": "anvils are heavy"}),
    ]
    text = switchyard(env, "runs", "show", run_id).stdout
    assert "3 segments (the run continued as new)" in text

    # A reset to publish replays the agent segment by segment, at no cost, and runs publish.
    done = switchyard(env, "runs", "reset", run_id, "--to", "publish", "--json")
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    assert (again["reused"], again["fresh"]) == (["research"], ["publish"])
    replayed = _ended(env, again["run_id"])
    assert replayed["status"] == "succeeded", replayed
    assert replayed["steps"]["research"]["output"] == {"text": "anvils are heavy"}
    assert replayed["steps"]["research"]["cost_usd"] == 0
    assert [s["status"] for s in replayed["segments"]] == ["continued", "continued", "succeeded"]


def test_an_agent_fails_once_its_turns_across_segments_reach_max_turns(
    env: dict[str, str], tmp_path: Path
) -> None:
    """With max_turns 7 the third segment (from turn 6) has one turn left, which calls a tool:
    the agent fails as any agent past its max_turns, in the third segment."""
    shown = _ended(env, _run(env, tmp_path, "b", 7)["run_id"])
    assert shown["status"] == "failed", shown
    assert "max_turns (7)" in shown["error"]["message"]
    assert [s["status"] for s in shown["segments"]] == ["continued", "continued", "failed"]
    assert shown["tokens"] == {"input": 7000, "output": 700}


def test_the_agents_budget_is_shared_by_its_segments(env: dict[str, str], tmp_path: Path) -> None:
    """Each segment's three calls cost $0.0045 (haiku: $1 and $5 a million tokens), under the
    step's $0.008; all eight calls would cost $0.012. The third segment's first call is refused
    by the step's one budget scope (`step:<run id>:research`, no segment in it): the segments
    spend one budget. Each with a budget of its own, the run would have succeeded."""
    shown = _ended(env, _run(env, tmp_path, "c", 20, step_limit="0.008")["run_id"])
    assert shown["status"] == "failed", shown
    run_id = shown["run_id"]
    assert shown["error"]["type"] == "budget", shown["error"]
    assert f"step:{run_id}:research's $0.008000" in shown["error"]["message"]
    # The run failed inside the agent before its record was written: the step shows the failure.
    assert shown["error"]["step"] == "research"
    research = shown["steps"]["research"]
    assert (research["status"], research["error"]["type"]) == ("failed", "budget"), research
    assert [s["status"] for s in shown["segments"]] == ["continued", "continued", "failed"]
    assert shown["segments"][2]["cost_usd"] == 0
