"""Compiled machines no larger than the workflow needs: checks only before steps that can be
skipped, and the examples' size and happy path as `switchyard compile --stats` measures them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from switchyard.cli.main import main
from switchyard.compile import compile_workflow
from switchyard.compile.stats import happy_transitions, machine_stats
from switchyard.validate import validate_file, validate_text
from tests.conftest import WORKFLOWS


def _compile(text: str) -> dict[str, Any]:
    workflow = validate_text(text).workflow
    assert workflow is not None
    return compile_workflow(workflow).definition


def _names(states: dict[str, Any]) -> set[str]:
    names = set(states)
    for state in states.values():
        for branch in state.get("Branches", []):
            names |= _names(branch["States"])
    return names


CHAIN = """
switchyard: 1
name: chain
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  a: {type: agent, prompt: a}
  b: {type: agent, after: [a], prompt: b}
  c: {type: agent, after: [b], prompt: c, when: 'steps.b.output.text == "go"'}
  d: {type: agent, after: [c], prompt: d}
  e: {type: agent, after: [c, b], prompt: e}
"""


def test_only_steps_that_can_be_skipped_get_a_check() -> None:
    names = _names(_compile(CHAIN)["States"])
    # b follows a, which completes or fails the run: b always runs.
    assert "b:check" not in names
    # c has a when; d's only dependency may be skipped; e has b, which is always alive.
    assert {"c:check", "c:skip", "d:check", "d:skip"} <= names
    assert "e:check" not in names


def test_a_dependency_that_continues_after_failing_keeps_the_check() -> None:
    text = CHAIN.replace("prompt: a}", "prompt: a, on_error: continue}")
    assert "b:check" in _names(_compile(text)["States"])


def test_a_router_target_is_always_checked() -> None:
    text = """
switchyard: 1
name: routed
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  a: {type: agent, prompt: a}
  r:
    type: router
    after: [a]
    strategy: rule
    routes: [{when: 'steps.a.output.text == "x"', to: x}]
    default: y
  x: {type: agent, after: [r], prompt: x}
  y: {type: agent, after: [r], prompt: y}
"""
    names = _names(_compile(text)["States"])
    assert {"x:check", "y:check"} <= names
    assert "r:check" not in names


def test_the_happy_path_runs_every_step_once() -> None:
    definition = _compile(CHAIN)
    # start, a, b, c:check, c, parallel: d, e, d:check, d, e, merge: d, e, outputs
    assert happy_transitions(definition) == 11


def test_stats_price_a_run_at_the_standard_price() -> None:
    stats = machine_stats("chain", 5, _compile(CHAIN))
    assert stats.happy_price_usd == Decimal(11) * Decimal("0.000025")
    assert "11 transitions" in stats.line()


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yaml")), ids=lambda p: p.stem)
def test_compile_stats_prints_each_workflow(path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "--check", "--stats", str(path)]) == 0
    workflow = validate_file(path).workflow
    assert workflow is not None
    out = capsys.readouterr().out
    assert out.startswith(f"{workflow.name}: ")
    assert "states for" in out and "per step" in out and "happy path" in out
