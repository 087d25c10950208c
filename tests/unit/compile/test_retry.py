"""Retry rules: `throttled` and `circuit_open` get a rule of their own that waits them out."""

from __future__ import annotations

from typing import Any

from switchyard.compile import compile_workflow
from switchyard.compile.retry import WAIT_OUT_MAX_DELAY, WAIT_OUT_RETRIES, retriers
from switchyard.contract import error_names_for, error_type_of
from switchyard.model import ErrorType, RetryPolicy
from switchyard.validate import validate_text

WORKFLOW = """
switchyard: 1
name: retries
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  draft: {type: agent, prompt: p}
  strict: {type: agent, prompt: p, retry: {max_attempts: 1}, after: [draft]}
  permanent_only: {type: agent, prompt: p, retry: {on: [permanent]}, after: [draft]}
  everything: {type: agent, prompt: p, retry: {on: [all], max_delay: 90s}, after: [draft]}
"""


def task_retries(step: str) -> list[dict[str, Any]]:
    result = validate_text(WORKFLOW)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    states = compile_workflow(result.workflow).definition["States"]
    found: list[dict[str, Any]] = []

    def collect(block: dict[str, Any]) -> None:
        for name, state in block["States"].items():
            if name == step and state["Type"] == "Task":
                found.extend(state.get("Retry", []))
            for branch in state.get("Branches", []):
                collect(branch)

    collect({"States": states})
    return found


def test_throttled_and_circuit_open_are_transient_error_names() -> None:
    for name in ("throttled", "circuit_open"):
        assert name in error_names_for(ErrorType.TRANSIENT)
        assert error_type_of(name) == "transient"


def test_the_default_policy_waits_throttled_out_before_its_own_rule() -> None:
    wait_out, rule = task_retries("draft")
    assert wait_out == {
        "ErrorEquals": ["throttled", "circuit_open"],
        "IntervalSeconds": 2,
        "MaxAttempts": WAIT_OUT_RETRIES,
        "BackoffRate": 2.0,
        "MaxDelaySeconds": WAIT_OUT_MAX_DELAY,
        "JitterStrategy": "FULL",
    }
    assert "throttled" not in rule["ErrorEquals"] and "circuit_open" not in rule["ErrorEquals"]
    assert "transient" in rule["ErrorEquals"]
    assert rule["MaxAttempts"] == 2


def test_no_retry_means_none_for_throttled_either() -> None:
    assert task_retries("strict") == []


def test_a_policy_that_does_not_retry_transient_errors_does_not_wait_throttled_out() -> None:
    assert [r["ErrorEquals"] for r in task_retries("permanent_only")] == [["permanent"]]


def test_on_all_keeps_states_all_last_and_the_longer_max_delay() -> None:
    never, wait_out, everything = task_retries("everything")
    assert never["MaxAttempts"] == 0
    assert wait_out["ErrorEquals"] == ["throttled", "circuit_open"]
    assert wait_out["MaxDelaySeconds"] == 90
    assert everything["ErrorEquals"] == ["States.ALL"]


def test_a_policy_with_more_attempts_keeps_them_for_throttled() -> None:
    wait_out, _ = retriers(RetryPolicy(max_attempts=20))
    assert wait_out["MaxAttempts"] == 19
