"""The compiled form of an agent with `continue_as_new`: a loop of one agent_step call per
segment, answered or handed on by the call's `continued`, entered again by a continued segment,
and recorded as the agent step with its answer as output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from switchyard.compile import compile_workflow
from switchyard.compile.history import worst_case_events
from tests.unit.compile.test_compiler import ASL_VALIDATOR
from tests.unit.compile.test_continue_as_new import _workflow

AGENT = """
switchyard: 1
name: deep-research
version: 1
defaults: {model: claude-haiku-4-5}
tools:
  search:
    description: Search.
    input_schema: {type: object}
    kind: python
    config: {function: "os:getcwd"}
    side_effect: none
steps:
  prep: {type: agent, prompt: "prep"}
  research:
    type: agent
    after: [prep]
    tools: [search]
    max_turns: 5000
    timeout: 10m
    budget: {max_cost_usd: 5}
    continue_as_new: {after: 40, summary: "Note what is left about {{ inputs.topic }}"}
    prompt: "Research {{ steps.prep.output.text }}"
  publish: {type: agent, after: [research], prompt: "publish {{ steps.research.output.text }}"}
inputs: {topic: {type: string}}
"""


def _states() -> dict[str, Any]:
    states: dict[str, Any] = compile_workflow(_workflow(AGENT)).definition["States"]
    return states


def test_the_machine_passes_asl_validator(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(compile_workflow(_workflow(AGENT)).definition))
    done = subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_each_call_is_answered_or_handed_on_by_its_continued_flag() -> None:
    states = _states()
    call = states["research"]
    assert call["ResultPath"] == "$.scope.result"
    assert call["ResultSelector"]["continued.$"] == "$.Payload.continued"
    assert call["TimeoutSeconds"] == 600  # the agent's timeout limits each call
    payload = call["Parameters"]["Payload"]
    assert payload["step"]["continue_as_new"]["after"] == 40
    # the budget is shared by all the calls (keyed without the segment), not one per call
    assert payload["parent_budget"] == {"max_cost_usd": 5.0}
    assert "budget" not in payload["step"]
    decide = states[call["Next"]]
    assert decide["Type"] == "Choice"
    assert decide["Choices"] == [
        {"Variable": "$.scope.result.continued", "BooleanEquals": True, "Next": "research:carry on"}
    ]
    done = states[decide["Default"]]
    # the step's record is the agent's, its output the answer as it is (no `iterations`)
    assert done["ResultPath"] == "$.steps.research"
    assert done["Parameters"] == {"status": "completed", "output.$": "$.scope.result.output"}
    assert done["Next"] == "publish"


def test_the_hand_over_carries_the_calls_summary_as_previous() -> None:
    states = _states()
    carry = states["research:carry on"]
    assert carry["Parameters"]["previous.$"] == "$.scope.result.output"
    start = states[carry["Next"]]
    assert start["Resource"] == "arn:aws:states:::states:startExecution"
    carried = start["Parameters"]["Input"]["switchyard:continue"]
    assert carried["loop"] == "research" and carried["scope"]["previous.$"] == "$.scope.previous"
    assert "deadline.$" not in carried
    assert "research:summary" not in states  # the model wrote the summary, not a template


def test_a_continued_segment_goes_straight_to_the_next_call() -> None:
    states = _states()
    assert states["start"]["Parameters"]["Payload"]["continuable"] is True
    resume = states[states["resume?"]["Choices"][0]["Next"]]
    assert resume["Next"] == "research"
    assert resume["Parameters"]["scope"]["previous.$"] == "$.resume.scope.previous"


def test_the_history_estimate_counts_one_call_and_the_hand_over() -> None:
    events, _ = worst_case_events(_workflow(AGENT))
    plain = AGENT.replace("max_turns: 5000", "max_turns: 50").replace(
        '    continue_as_new: {after: 40, summary: "Note what is left about {{ inputs.topic }}"}\n',
        "",
    )
    one_call, _ = worst_case_events(_workflow(plain))
    assert one_call < events <= one_call + 20  # a few Pass states, the next segment started
