"""A run whose loop continues as new, through `switchyard run` with the real step functions and
the budget ledger: one run with segments to people (`run --json`, `runs show`), its spend the
segments' together, and its budget not reset by a new segment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli import cli_environment, switchyard

LOOP = """\
switchyard: 1
name: long-refine-VERSION
version: 1
budget: {max_cost_usd: LIMIT, on_exceeded: fail}
defaults: {model: claude-haiku-4-5}
steps:
  refine:
    type: loop
    max_iterations: 7
    until: output.score >= 0.8
    continue_as_new: {after: 2, summary: {best: "{{ previous.score }}"}}
    step:
      type: agent
      prompt: "improve on {{ previous }}"
      budget: {max_cost_usd: 0.01}
      output_schema: {type: object, properties: {score: {type: number}}, required: [score]}
"""
SCRIPT = """\
refine:
  - {output: {score: 0.1}, input_tokens: 1000, output_tokens: 100}
  - {output: {score: 0.2}, input_tokens: 1000, output_tokens: 100}
  - {output: {score: 0.3}, input_tokens: 1000, output_tokens: 100}
  - {output: {score: 0.4}, input_tokens: 1000, output_tokens: 100}
  - {output: {score: 0.9}, input_tokens: 1000, output_tokens: 100}
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with cli_environment(tmp_path_factory.mktemp("home")) as environment:
        yield environment


def _run(env: dict[str, str], tmp_path: Path, limit: str, version: str) -> dict[str, Any]:
    (tmp_path / "loop.yaml").write_text(LOOP.replace("LIMIT", limit).replace("VERSION", version))
    (tmp_path / "script.yaml").write_text(SCRIPT)
    done = switchyard(
        env, "run", str(tmp_path / "loop.yaml"), "--llm-script", str(tmp_path / "script.yaml"),
        "--json",
    )  # fmt: skip
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def _ledger(env: dict[str, str], run_id: str) -> Decimal:
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        row = conn.execute(
            "SELECT spent_micros FROM budget_scopes WHERE scope = %s", (f"run:{run_id}",)
        ).fetchone()
    assert row is not None
    return Decimal(int(row[0])) / 1_000_000


def test_a_continued_run_is_one_run_with_its_segments(env: dict[str, str], tmp_path: Path) -> None:
    shown = _run(env, tmp_path, "1.00", "a")
    assert shown["status"] == "succeeded"
    assert shown["steps"]["refine"]["output"] == {"score": 0.9, "iterations": 5}
    segments = shown["segments"]
    run_id = shown["run_id"]
    assert [s["run_id"] for s in segments] == [run_id, f"{run_id}-2", f"{run_id}-3"]
    assert [s["status"] for s in segments] == ["continued", "continued", "succeeded"]
    assert [s["continued_from"] for s in segments] == [None, run_id, f"{run_id}-2"]
    total = sum(Decimal(str(s["cost_usd"])) for s in segments)
    assert total > 0 and Decimal(str(shown["cost_usd"])) == total
    assert shown["tokens"] == {"input": 5000, "output": 500}
    # one budget scope for the whole run: the ledger spent what every segment spent
    assert _ledger(env, run_id) == total
    for name in (run_id, f"{run_id}-2"):  # any segment's id shows the whole run
        again = json.loads(switchyard(env, "runs", "show", name, "--json").stdout)
        assert again["run_id"] == run_id and again["status"] == "succeeded"
        assert Decimal(str(again["cost_usd"])) == total
    text = switchyard(env, "runs", "show", run_id).stdout
    assert "3 segments (the run continued as new)" in text
    listed = switchyard(env, "runs", "list").stdout
    assert f"(segment 2 of {run_id})" in listed and f"(segment 3 of {run_id})" in listed


def test_the_budget_goes_on_across_segments(env: dict[str, str], tmp_path: Path) -> None:
    """`max_steps: 4` counts the attempts of the whole run: the fifth iteration, the first of
    the third segment, is refused; had each segment a fresh budget (two attempts each), the run
    would have succeeded."""
    shown = _run(env, tmp_path, "1.00, max_steps: 4", "b")
    assert shown["status"] == "failed", shown
    assert shown["error"]["type"] == "budget"
    assert [s["status"] for s in shown["segments"]] == ["continued", "continued", "failed"]
    assert shown["tokens"] == {"input": 4000, "output": 400}
    assert _ledger(env, shown["run_id"]) == Decimal(str(shown["cost_usd"]))
