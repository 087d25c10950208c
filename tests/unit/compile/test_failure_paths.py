"""What the compiler emits around a step's failures: the gate that waits for a person when a
tool call needs one, the failed record (plain message, attempts) and the dead letter (what the
step received)."""

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
    """Loop detection checks every tool call: the third identical call stops for a person."""
    found = states(f"steps:\n  call: {step}\n")
    gate = found["call:needs a human"]
    assert gate["Parameters"]["Payload"]["kind"] == "human"
    (task,) = [name for name, s in found.items() if "human_required" in catches(s)]
    assert catches(found[task])["human_required"] == "call:needs a human"
    assert gate["Next"] == task  # the step runs again with the person's decision


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
    assert "call:needs a human" not in found
    assert all("human_required" not in catches(s) for s in found.values())


def test_a_failed_record_reads_the_plain_message_and_the_attempts_from_the_error() -> None:
    found = states("steps:\n  call: {type: tool, tool: echo, args: {x: 1}}\n")
    assert catches(found["call"])["States.ALL"] == "call:error"
    read = found["call:error"]
    assert read["Parameters"]["FunctionName"] == "${RenderFunctionArn}"
    assert read["Parameters"]["Payload"] == {"helper": "failure", "error.$": "$.error"}
    assert read["ResultPath"] == "$.error" and read["Next"] == "call:failed"
    # The render function failing never blocks the failure path: the error is kept as caught.
    assert catches(read) == {"States.ALL": "call:error as is"}
    assert read["Catch"][0]["ResultPath"] is None
    assert found["call:error as is"]["Next"] == "call:failed"
    assert found["call:failed"]["Parameters"] == {
        "status": "failed",
        "output": None,
        "error": {"type.$": "$.error.Error", "message.$": "$.error.Cause"},
        "attempts.$": "$.error.attempts",
    }
    assert found["call:failed"]["Next"] == "call:dead letter"


def test_a_dead_letter_carries_what_the_step_received() -> None:
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
    body = found["call:dead letter"]["Parameters"]["MessageBody"]
    assert body["input"] == {
        "inputs.$": "$.inputs",
        "steps": {"classify.$": "$.steps.classify", "other.$": "$.steps.other"},
    }
    assert "inputs.$" not in body and body["run.$"] == "$.run"
    assert body["error.$"] == "$.steps.call.error"
    looped = found["again:dead letter"]["Parameters"]["MessageBody"]["input"]
    assert looped == {
        "inputs.$": "$.inputs",
        "steps": {"call.$": "$.steps.call"},
        "scope.$": "$.scope",
    }
