"""The example workflows through `switchyard run` on the local engine, on a fresh PostgreSQL
database, answering from their scripts: exit 0, the outputs the scripts lead to, and per-step
tokens and cost in the `--json` output that add up, exactly, to the run's totals. Also
content-moderation's moderator branch, its gate decided with `--approve` and `--reject`.

customer-support runs the same way in tests/unit/cli/test_run_cmd.py (with its gate).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import cli_environment, switchyard
from tests.e2e.examples import (
    STEP_STATUSES,
    expected_child_runs,
    expected_model_calls,
    expected_output,
    input_path,
    price,
    script,
    script_path,
    workflow_path,
)

EXAMPLES = ("document-processing", "content-moderation")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The CLI's environment: a fresh database, a home of its own, no model key."""
    with cli_environment(tmp_path_factory.mktemp("home")) as environment:
        yield environment


def _json(text: str) -> Any:
    """`--json` output with every number exact (money is added up as Decimal)."""
    return json.loads(text, parse_float=Decimal)


def run_example(
    env: dict[str, str], name: str, *extra: str, script_file: Path | None = None
) -> dict[str, Any]:
    done = switchyard(
        env,
        "run",
        str(workflow_path(name)),
        "--input",
        f"@{input_path(name)}",
        "--llm-script",
        str(script_file or script_path(name)),
        "--json",
        *extra,
    )
    assert done.returncode == 0, done.stderr
    run: dict[str, Any] = _json(done.stdout)
    return run


@pytest.fixture(scope="module")
def runs(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """One run of each example (and the children's runs, by workflow), shown with --json."""
    found = {name: run_example(env, name) for name in EXAMPLES}
    listed = switchyard(env, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    for run in _json(listed.stdout):
        if run["workflow"] not in found:
            shown = switchyard(env, "runs", "show", run["run_id"], "--json")
            assert shown.returncode == 0, shown.stderr
            found[run["run_id"]] = _json(shown.stdout)
    return found


def children_of(runs: dict[str, dict[str, Any]], workflow: str) -> list[dict[str, Any]]:
    return [run for run in runs.values() if run["workflow"] == workflow]


def assert_steps_add_up_to_the_run(run: dict[str, Any], example: str) -> None:
    """Per-step tokens and cost sum to the run's totals; model steps spent what the script says,
    priced by the model catalog."""
    steps = run["steps"].values()
    assert sum(s["tokens"]["input"] for s in steps) == run["tokens"]["input"]
    assert sum(s["tokens"]["output"] for s in steps) == run["tokens"]["output"]
    assert sum(s["cost_usd"] for s in steps) == run["cost_usd"] > 0
    for step_id, calls in expected_model_calls(example, run["workflow"]).items():
        step = run["steps"][step_id]
        assert step["provider"] == "scripted" and step["model"] == calls[0][0]
        assert step["tokens"] == {
            "input": sum(c[1] for c in calls),
            "output": sum(c[2] for c in calls),
        }
        assert step["cost_usd"] == sum(price(*c) for c in calls)


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_example_runs_to_the_end_and_its_steps_add_up_to_the_run(
    runs: dict[str, dict[str, Any]], example: str
) -> None:
    run = runs[example]
    assert run["status"] == "succeeded", run["error"]
    assert run["output"] == _json(json.dumps(expected_output(example)))
    expected = STEP_STATUSES[example]
    assert {s: run["steps"][s]["status"] for s in expected} == expected
    assert run["waiting_for"] == []
    assert_steps_add_up_to_the_run(run, example)


def test_every_document_is_summarised_by_a_child_run_whose_steps_add_up(
    runs: dict[str, dict[str, Any]],
) -> None:
    documents = json.loads(input_path("document-processing").read_text())["documents"]
    summaries = runs["document-processing"]["steps"]["summarize_each"]["output"]
    assert [s["id"] for s in summaries] == [d["id"] for d in documents]
    assert all(s["risk_level"] == "medium" for s in summaries)
    children = children_of(runs, "summarize-document")
    assert len(children) == expected_child_runs("document-processing") == len(documents)
    for child in children:
        assert child["status"] == "succeeded"
        assert {s: child["steps"][s]["status"] for s in ("fetch", "summarize")} == {
            "fetch": "completed",
            "summarize": "completed",
        }
        assert_steps_add_up_to_the_run(child, "document-processing")


@pytest.mark.parametrize(
    ("flag", "decision", "publish"),
    [("--approve", "published", "completed"), ("--reject", "rejected", "skipped")],
)
def test_a_post_the_router_sends_to_a_moderator_waits_for_the_decision(
    env: dict[str, str], tmp_path: Path, flag: str, decision: str, publish: str
) -> None:
    """content-moderation's other branch: the same script, but the LLM router picks a person."""
    answers = script("content-moderation")
    answers["borderline"][0]["route"] = "human_review"
    variant = tmp_path / "moderator.yaml"
    variant.write_text(yaml.safe_dump(answers))
    run = run_example(
        env, "content-moderation", flag, "human_review=checked by a moderator", script_file=variant
    )
    assert run["status"] == "succeeded", run["error"]
    assert run["output"]["decision"] == decision
    statuses = {s: step["status"] for s, step in run["steps"].items()}
    assert statuses["refine"] == "skipped" and statuses["publish"] == publish
    assert statuses["human_review"] == ("completed" if flag == "--approve" else "failed")
    steps = run["steps"].values()
    assert sum(s["cost_usd"] for s in steps) == run["cost_usd"]
    assert sum(s["tokens"]["input"] for s in steps) == run["tokens"]["input"]
    assert run["tokens"]["input"] == sum(
        answers[s][0]["input_tokens"] for s in ("score", "borderline")
    )


def test_a_parent_runs_totals_include_its_child_runs_spend(
    runs: dict[str, dict[str, Any]],
) -> None:
    parent = runs["document-processing"]
    child_cost = sum(c["cost_usd"] for c in children_of(runs, "summarize-document"))
    assert child_cost > 0
    assert parent["steps"]["summarize_each"]["cost_usd"] == child_cost
    assert parent["cost_usd"] == parent["steps"]["brief"]["cost_usd"] + child_cost
