"""`switchyard run` reports what the budget ledger settled, even when a map fails on a budget
refusal while other items are still calling the model (their spend comes after the end)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from tests.cli import cli_environment, switchyard

MAP = """\
switchyard: 1
name: costly-map
version: VERSION
budget: {max_cost_usd: LIMIT, on_exceeded: fail}
defaults: {model: claude-haiku-4-5}
inputs:
  items: {type: array, items: {type: string}}
steps:
  fan:
    type: map
    items: "{{ inputs.items }}"
    max_concurrency: 4
    step: {type: agent, prompt: "summarize {{ item }}"}
"""
SCRIPT = "fan:\n  - {text: ok, input_tokens: 4000, output_tokens: 1000}\n"
ITEMS = json.dumps({"items": [f"item-{i}" for i in range(12)]})


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with cli_environment(tmp_path_factory.mktemp("home")) as environment:
        yield environment


def run(
    env: dict[str, str], tmp_path: Path, limit: str, version: int
) -> tuple[dict[str, object], int]:
    """One run under `limit`; another limit is another definition, so another `version` (a
    version names one definition). The historical average is the step's across versions."""
    (tmp_path / "map.yaml").write_text(MAP.replace("LIMIT", limit).replace("VERSION", str(version)))
    (tmp_path / "script.yaml").write_text(SCRIPT)
    done = switchyard(
        env, "run", str(tmp_path / "map.yaml"), "--llm-script", str(tmp_path / "script.yaml"),
        "--input", ITEMS, "--json",
    )  # fmt: skip
    shown = json.loads(done.stdout)
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        row = conn.execute(
            "SELECT spent_micros FROM budget_scopes WHERE scope = %s", (f"run:{shown['run_id']}",)
        ).fetchone()
    assert row is not None
    return shown, int(row[0])


def test_a_map_failed_on_a_budget_refusal_reports_what_the_ledger_settled(
    env: dict[str, str], tmp_path: Path
) -> None:
    first, settled = run(env, tmp_path, "1.00", 1)  # gives the step an average cost to reserve
    assert first["status"] == "succeeded"
    for _ in range(3):  # 4 items in flight; the 6th reservation no longer fits
        shown, settled = run(env, tmp_path, "0.05", 2)
        assert shown["status"] == "failed"
        assert shown["error"]["type"] == "budget"  # type: ignore[index]
        assert Decimal(str(shown["cost_usd"])) == Decimal(settled) / 1_000_000
        again = json.loads(switchyard(env, "runs", "show", str(shown["run_id"]), "--json").stdout)
        assert Decimal(str(again["cost_usd"])) == Decimal(settled) / 1_000_000
