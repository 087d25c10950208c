"""The compiled machines: valid ASL (asl-validator), deterministic, within Step Functions' rules
that asl-validator does not check, and the committed statemachines/ up to date."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from switchyard.cli.main import main
from switchyard.compile import compile_workflow
from switchyard.contract import FUNCTIONS, function_placeholder, placeholders_in
from switchyard.diagnostics import Code, Severity
from switchyard.validate import validate_file, validate_text
from tests.conftest import REPO, WORKFLOWS
from tests.scenarios.harness.scenario import load_scenario

ASL_VALIDATOR = REPO / "node_modules" / ".bin" / "asl-validator"
SCENARIOS = sorted((REPO / "tests" / "scenarios" / "cases").glob("*.yaml"))


def all_definitions() -> dict[str, str]:
    """Every machine the tests compile: the examples and the scenario corpus (and children)."""
    texts: dict[str, str] = {}
    for path in sorted(WORKFLOWS.glob("*.yaml")):
        workflow = validate_file(path).workflow
        assert workflow is not None
        texts[f"example {path.stem}"] = compile_workflow(workflow).text
    for path in SCENARIOS:
        scenario = load_scenario(path)
        texts[f"scenario {path.stem}"] = compile_workflow(scenario.workflow).text
        for child in scenario.children:
            texts[f"scenario {path.stem} child {child.name}"] = compile_workflow(child).text
    return texts


@pytest.fixture(scope="module")
def definitions() -> dict[str, str]:
    return all_definitions()


def states_of(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in definition["States"].items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from states_of(branch)
        if "ItemProcessor" in state:
            yield from states_of(state["ItemProcessor"])


def test_every_machine_passes_asl_validator(definitions: dict[str, str], tmp_path: Path) -> None:
    args = [str(ASL_VALIDATOR)]
    for index, text in enumerate(definitions.values()):
        path = tmp_path / f"machine-{index}.json"
        path.write_text(text)
        args += ["--json-path", str(path)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("is valid") == len(definitions)


def test_retry_values_asl_validator_does_not_check(definitions: dict[str, str]) -> None:
    retriers = 0
    for label, text in definitions.items():
        for name, state in states_of(json.loads(text)):
            for retrier in state.get("Retry", []):
                retriers += 1
                where = f"{label}: {name}"
                if "JitterStrategy" in retrier:
                    assert retrier["JitterStrategy"] in ("FULL", "NONE"), where
                if "MaxDelaySeconds" in retrier:
                    value = retrier["MaxDelaySeconds"]
                    assert isinstance(value, int) and 0 < value < 31622401, where
                if "IntervalSeconds" in retrier:
                    value = retrier["IntervalSeconds"]
                    assert isinstance(value, int) and 0 < value <= 99999999, where
                if "BackoffRate" in retrier:
                    assert retrier["BackoffRate"] >= 1.0, where
                attempts = retrier.get("MaxAttempts", 3)
                assert isinstance(attempts, int) and 0 <= attempts <= 99999999, where
                assert retrier["ErrorEquals"], where
                if "States.ALL" in retrier["ErrorEquals"]:
                    assert retrier["ErrorEquals"] == ["States.ALL"], where
                    assert retrier is state["Retry"][-1], where
    assert retriers > 20


def test_state_names_are_short_and_unique(definitions: dict[str, str]) -> None:
    for label, text in definitions.items():
        names = [name for name, _ in states_of(json.loads(text))]
        assert len(names) == len(set(names)), label
        assert all(0 < len(name) <= 80 for name in names), label


def test_only_documented_placeholders_remain(definitions: dict[str, str]) -> None:
    functions = {function_placeholder(f)[2:-1] for f in FUNCTIONS}
    for label, text in definitions.items():
        for name in placeholders_in(text):
            assert (
                name in functions
                or name == "DeadLetterQueueUrl"
                or re.fullmatch(r"[A-Z][A-Za-z0-9]*StateMachineArn", name)
            ), f"{label}: ${{{name}}}"


def test_compiling_twice_gives_the_same_bytes() -> None:
    path = WORKFLOWS / "content-moderation.yaml"
    first = compile_workflow(validate_file(path).workflow).text  # type: ignore[arg-type]
    second = compile_workflow(validate_file(path).workflow).text  # type: ignore[arg-type]
    assert first == second


def test_the_machine_names_the_workflow_and_its_version() -> None:
    workflow = validate_file(WORKFLOWS / "customer-support.yaml").workflow
    assert workflow is not None
    definition = compile_workflow(workflow).definition
    assert definition["Comment"].startswith("switchyard workflow customer-support version 1")
    assert definition["QueryLanguage"] == "JSONPath"
    assert definition["TimeoutSeconds"] == 8 * 3600  # budget.max_duration: 8h


def test_committed_state_machines_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted(WORKFLOWS.glob("*.yaml"))]
    code = main(["compile", "--check", "-o", str(REPO / "statemachines"), *files])
    assert code == 0, capsys.readouterr().out


def test_check_fails_on_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(WORKFLOWS / "customer-support.yaml")
    assert main(["compile", "-o", str(tmp_path), source]) == 0
    (tmp_path / "customer-support.asl.json").write_text("{}")
    assert main(["compile", "--check", "-o", str(tmp_path), source]) == 1
    assert "differs from a fresh compile" in capsys.readouterr().out


def test_a_non_series_parallel_dag_gets_a_note_naming_the_edge() -> None:
    text = """
switchyard: 1
name: n-shape
version: 1
defaults: {model: m}
steps:
  a: {type: agent, prompt: a}
  b: {type: agent, prompt: b}
  c: {type: agent, after: [a], prompt: c}
  d: {type: agent, after: [a, b], prompt: d}
"""
    result = validate_text(text)
    assert result.workflow is not None
    (note,) = compile_workflow(result.workflow).notes
    assert note.code is Code.SYNC_EDGE and note.severity is Severity.NOTE
    assert "'c' also waits for 'b'" in note.message


def test_a_run_that_could_pass_the_history_limit_is_warned_about() -> None:
    text = """
switchyard: 1
name: big
version: 1
inputs: {docs: {type: array, maxItems: 2000}}
defaults: {model: m}
steps:
  each:
    type: map
    items: "{{ inputs.docs }}"
    step:
      type: agent
      prompt: "{{ item }}"
      output_schema: {enum: [spam, ham]}
"""
    result = validate_text(text)  # 2,000 outputs of an enum fit the state (payload_size)
    assert result.workflow is not None
    (warning,) = compile_workflow(result.workflow).notes
    assert warning.code is Code.HISTORY_LIMIT and warning.severity is Severity.WARNING
    assert "25,000" in warning.message


def test_linear_backoff_is_a_wait_loop_with_the_exact_delays() -> None:
    text = """
switchyard: 1
name: linear
version: 1
defaults: {model: m}
steps:
  slow:
    type: agent
    prompt: slow
    retry: {max_attempts: 5, backoff: linear, base_delay: 3s, max_delay: 10s, jitter: none}
"""
    result = validate_text(text)
    assert result.workflow is not None
    states = compile_workflow(result.workflow).definition["States"]
    assert "Retry" not in states["slow"] or states["slow"]["Retry"] == []
    count = states["slow:count retry"]["Parameters"]["delay.$"]
    assert count == "States.ArrayGetItem(States.Array(3, 6, 9, 10), $.steps.slow.retries)"
    assert states["slow:backoff"]["SecondsPath"] == "$.steps.slow.delay"
