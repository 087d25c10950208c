"""Steps through `switchyard run` on the local engine, with the real step functions: loop
detection stopping a plain tool step for a person (approved, rejected), what a step that failed
for good leaves in `--json` (its attempts, its error's plain message), and a map's budget shared
by its items."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import cli_environment, switchyard

WORKFLOWS = Path(__file__).parent / "workflows"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with cli_environment(tmp_path_factory.mktemp("home")) as environment:
        yield environment


def run(env: dict[str, str], workflow: str, *extra: str) -> tuple[int, dict[str, Any]]:
    done = switchyard(env, "run", str(WORKFLOWS / f"{workflow}.yaml"), "--json", *extra)
    return done.returncode, json.loads(done.stdout)


def test_the_third_identical_tool_call_waits_for_a_person_and_runs_once_approved(
    env: dict[str, str],
) -> None:
    code, shown = run(env, "loop-detection", "--approve", "third=it is not stuck")
    assert code == 0, shown
    assert shown["status"] == "succeeded"
    assert shown["output"] == {"third": {"x": 1}}
    assert {s: shown["steps"][s]["status"] for s in ("first", "second", "third")} == {
        "first": "completed",
        "second": "completed",
        "third": "completed",
    }


def test_the_third_identical_tool_call_rejected_fails_the_step_rejected(
    env: dict[str, str],
) -> None:
    code, shown = run(env, "loop-detection", "--reject", "third=looks stuck")
    assert code == 1
    assert shown["status"] == "failed"
    third = shown["steps"]["third"]
    assert third["status"] == "failed"
    assert third["error"] == {
        "type": "rejected",
        "message": "a person rejected this call of echo: looks stuck",
    }
    assert shown["error"] == {**third["error"], "step": "third"}


def test_a_step_that_failed_for_good_shows_its_attempts_and_its_plain_message(
    env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(
        "fetch:\n  - {error: transient, message: 502 bad gateway}\n"
        "  - {error: permanent, message: 404 not found}\n"
    )
    code, shown = run(env, "retried-failure", "--llm-script", str(script))
    assert code == 1
    fetch = shown["steps"]["fetch"]
    assert fetch["status"] == "failed" and fetch["attempts"] == 2
    assert fetch["error"] == {"type": "permanent", "message": "404 not found"}
    assert shown["error"] == {"type": "permanent", "message": "404 not found", "step": "fetch"}


def test_a_maps_budget_is_shared_by_its_items(env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("each:\n  - {text: '%s', output_tokens: 290}\n" % ("fine " * 300))
    code, shown = run(
        env,
        "map-budget",
        "--input",
        json.dumps({"cities": ["Paris", "Rome", "Oslo"]}),
        "--llm-script",
        str(script),
    )
    assert code == 1
    assert shown["status"] == "failed"
    assert shown["error"]["type"] == "budget" and shown["error"]["step"] == "each"
    # The first item spent ~$0.0044 of the map's $0.008; the second was capped to what the
    # map had left (its answer cut at max_tokens), and the third could not pay for an answer.
    assert 0.0075 < shown["cost_usd"] <= 0.008
    assert shown["steps"]["each"]["status"] == "failed"


def test_a_failed_attempts_spend_counts_in_the_step_and_run_totals(
    env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(
        "classify:\n"
        "  - {text: not json, input_tokens: 1000, output_tokens: 100}\n"
        '  - {text: \'{"label": "billing"}\', input_tokens: 1000, output_tokens: 100}\n'
    )
    code, shown = run(env, "retried-agent", "--llm-script", str(script))
    assert code == 0, shown
    classify = shown["steps"]["classify"]
    assert classify["attempts"] == 2 and classify["output"] == {"label": "billing"}
    # Two calls of claude-haiku-4-5, 1,000 in and 100 out each: $0.0015 apiece, both paid.
    assert classify["cost_usd"] == 0.003
    assert classify["tokens"] == {"input": 2000, "output": 200}
    assert shown["cost_usd"] == 0.003
    assert shown["tokens"] == {"input": 2000, "output": 200}


def test_the_workflows_outputs_read_a_large_output_back(
    env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(
        json.dumps({"write": [{"text": "Once " + "x" * 40_000, "output_tokens": 10_000}]})
    )
    code, shown = run(env, "large-output", "--llm-script", str(script))
    assert code == 0, shown
    assert "$switchyard_ref" in json.dumps(shown["steps"]["write"]["output"])
    assert shown["output"] == {"length": 40_005, "head": "Once "}


def test_a_failure_at_outputs_reads_as_a_plain_message_naming_outputs(
    env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("write:\n  - {text: abc}\n")
    code, shown = run(env, "failing-outputs", "--llm-script", str(script))
    assert code == 1
    assert shown["error"]["type"] == "template"
    assert shown["error"]["message"] == (
        "outputs.per_word: template '{{ 100 // ((steps.write.output.text | length) - 3) }}' "
        "failed: integer division or modulo by zero"
    )
