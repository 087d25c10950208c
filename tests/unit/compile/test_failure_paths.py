"""What the compiler emits around a step's failures: one tail per block, shared by its steps
(`on error`, `after error`, `dead letter`, `fail` and the gates), the gate that waits for a
person when a tool call needs one, and what the tail must know of each step (what its dead letter
carries)."""

from __future__ import annotations

from typing import Any

import pytest

from switchyard.compile import compile_workflow
from switchyard.validate import validate_text

HEAD = """
switchyard: 1
name: paths
version: 1
defaults: {model: m}
tools:
  echo:
    description: Echo.
    input_schema: {type: object}
    kind: python
    config: {function: "builtins:dict"}
    side_effect: none
"""


def states(steps: str, head: str = HEAD) -> dict[str, Any]:
    result = validate_text(head + steps)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    found: dict[str, Any] = {}

    def collect(block: dict[str, Any]) -> None:
        for name, state in block["States"].items():
            found[name] = state
            for branch in state.get("Branches", []):
                collect(branch)
            if "ItemProcessor" in state:
                collect(state["ItemProcessor"])

    collect(compile_workflow(result.workflow).definition)
    return found


def catches(state: dict[str, Any]) -> dict[str, str]:
    return {name: c["Next"] for c in state.get("Catch", []) for name in c["ErrorEquals"]}


@pytest.mark.parametrize(
    "step",
    [
        "{type: tool, tool: echo, args: {x: 1}}",
        "{type: tool, tool: http.request, args: {method: GET, url: 'https://x.example'}}",
        "{type: tool, tool: email.send, args: {to: a@b.example, body: hi}}",
        "{type: agent, prompt: p, tools: [echo]}",
        "{type: loop, max_iterations: 3, step: {type: tool, tool: echo, args: {x: 1}}}",
        "{type: map, items: '{{ inputs }}', step: {type: tool, tool: echo, args: {x: 1}}}",
    ],
)
def test_every_step_that_calls_tools_waits_for_a_person_on_human_required(step: str) -> None:
    """Loop detection checks every tool call: the third identical call stops for a person. A
    block with one such step names it in its gate, which goes straight back to it."""
    found = states(f"steps:\n  call: {step}\n")
    gate = found["needs a human"]
    assert gate["Parameters"]["Payload"]["kind"] == "human"
    assert gate["Parameters"]["Payload"]["step_id"] == "call"
    (task,) = [name for name, s in found.items() if "human_required" in catches(s)]
    assert catches(found[task])["human_required"] == "needs a human"
    assert gate["Next"] == task  # the step runs again with the person's decision


def test_steps_of_one_block_share_one_tail_that_dispatches_on_the_step() -> None:
    found = states(
        """steps:
  first: {type: tool, tool: echo, args: {x: 1}}
  second: {type: agent, after: [first], prompt: p, on_error: continue}
  third: {type: agent, after: [second], prompt: p, on_error: pause}
"""
    )
    for step in ("first", "second", "third"):
        rule = found[step]["Catch"][-1]
        assert rule == {
            "ErrorEquals": ["States.ALL"],
            "ResultPath": f"$.steps.{step}",  # how the tail tells which step failed
            "Next": "on error",
        }
    # No state of its own for any of them, but third's check (second may have failed).
    assert [n for n in found if n.startswith(("first:", "second:", "third:"))] == [
        "third:skip",
        "third:check",
    ]
    on_error = found["on error"]
    assert on_error["Parameters"]["Payload"]["helper"] == "caught"
    assert on_error["Parameters"]["Payload"]["steps"]["second"]["on_error"] == "continue"
    assert on_error["Next"] == "after error"
    after = found["after error"]
    assert after["Default"] == "dead letter"
    targets = [rule["Next"] for rule in after["Choices"]]
    # A gate resumes the step it served; a budget or human error opens its gate; after the
    # dead letter, `continue` goes on after its step, `pause` waits, `fail` fails the run.
    assert {"first", "second", "third", "budget gate", "needs a human", "paused", "fail"} <= set(
        targets
    )
    assert found["paused"]["Parameters"]["Payload"]["step_id.$"] == "$.error.step"
    assert found["dead letter"]["Next"] == "after error"


@pytest.mark.parametrize(
    "step",
    [
        "{type: agent, prompt: p}",
        "{type: router, strategy: llm, routes: [{to: x, description: d}], default: x}",
    ],
)
def test_steps_that_call_no_tool_have_no_human_gate(step: str) -> None:
    steps = f"steps:\n  call: {step}\n"
    if "router" in step:
        steps += "  x: {type: agent, after: [call], prompt: p}\n"
    found = states(steps)
    assert "needs a human" not in found
    assert all("human_required" not in catches(s) for s in found.values())


def test_the_tail_reads_the_error_and_records_the_failure_in_one_task() -> None:
    found = states("steps:\n  call: {type: tool, tool: echo, args: {x: 1}}\n")
    assert catches(found["call"])["States.ALL"] == "on error"
    read = found["on error"]
    assert read["Parameters"]["FunctionName"] == "${RenderFunctionArn}"
    payload = read["Parameters"]["Payload"]
    assert payload["helper"] == "caught" and payload["state.$"] == "$"
    assert read["ResultPath"] == "$" and read["OutputPath"] == "$.Payload"
    # One step in the block: no dispatch, the dead letter then the run's Fail.
    assert read["Next"] == "dead letter" and found["dead letter"]["Next"] == "fail"
    assert found["dead letter"]["Parameters"]["MessageBody.$"] == "$.error.letter"
    assert catches(found["dead letter"]) == {"States.ALL": "fail"}


def test_the_tail_knows_what_each_dead_letter_carries() -> None:
    found = states(
        """inputs: {ticket: {type: string}}
steps:
  classify: {type: agent, prompt: "{{ inputs.ticket }}"}
  other: {type: agent, after: [classify], prompt: "x"}
  call:
    type: tool
    after: [other]
    tool: echo
    args: {x: "{{ steps.classify.output.text }}"}
  again:
    type: loop
    after: [call]
    max_iterations: 2
    step: {type: agent, prompt: "{{ previous }}"}
"""
    )
    table = found["on error"]["Parameters"]["Payload"]["steps"]
    assert table["call"]["reads"] == ["classify", "other"]
    assert "scope" not in table["call"]
    assert table["again"]["reads"] == ["call"] and table["again"]["scope"] is True
