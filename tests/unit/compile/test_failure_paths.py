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
    block with one such step names it in its gate, which goes straight back to it; one gate
    serves both a refused budget and a person needed, and takes its kind from the error."""
    found = states(f"steps:\n  call: {step}\n")
    gate = found["operator gate"]
    assert gate["Parameters"]["Payload"]["kind.$"] == "$.error.Error"
    assert gate["Parameters"]["Payload"]["step_id"] == "call"
    (task,) = [name for name, s in found.items() if "human_required" in catches(s)]
    assert catches(found[task])["human_required"] == "operator gate"
    assert catches(found[task])["budget"] == "operator gate"
    assert gate["Next"] == task  # the step runs again with the person's decision
    assert not {"budget gate", "needs a human"} & set(found)


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
    # A gate resumes the step it served; a budget or human error opens the gate; after the
    # dead letter, `continue` goes on after its step, `pause` waits, `fail` fails the run.
    assert {"first", "second", "third", "operator gate", "fail"} <= set(targets)
    # One gate serves the budget, the person and the pause: the action read names its kind.
    assert not {"budget gate", "needs a human", "paused"} & set(found)
    payload = found["operator gate"]["Parameters"]["Payload"]
    assert payload["kind.$"] == "$.error.action" and "kind" not in payload
    assert payload["step_id.$"] == "$.error.step"
    opens = [rule for rule in after["Choices"] if rule["Next"] == "operator gate"]
    assert opens[0] == {
        "Or": [
            {"Variable": "$.error.action", "StringEquals": "budget"},
            {"Variable": "$.error.action", "StringEquals": "human"},
        ],
        "Next": "operator gate",
    }
    assert found["dead letter"]["Next"] == "after error"


def test_when_every_step_fails_the_run_its_dead_letter_goes_straight_to_fail() -> None:
    """No step of the block goes on after its dead letter (no continue, pause or fallback), so
    `after error` has nothing to decide after it: on error, after error, dead letter, fail."""
    found = states(
        """steps:
  first: {type: tool, tool: echo, args: {x: 1}}
  second: {type: agent, after: [first], prompt: p}
"""
    )
    letter = found["dead letter"]
    assert letter["Next"] == "fail"
    assert letter["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error.sent",
                                "Next": "fail"}]  # fmt: skip
    after = found["after error"]
    assert after["Default"] == "dead letter"
    assert {rule["Next"] for rule in after["Choices"]} == {"first", "second", "operator gate"}
    assert not any("$.error.sent" in str(rule) for rule in after["Choices"])


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
    assert "needs a human" not in found and "operator gate" not in found
    assert found["budget gate"]["Parameters"]["Payload"]["kind"] == "budget"
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


def _parallel(definition: dict[str, Any]) -> dict[str, Any]:
    (parallel,) = [s for s in definition["States"].values() if s["Type"] == "Parallel"]
    return parallel


def _definition(steps: str) -> dict[str, Any]:
    result = validate_text(HEAD + steps)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return compile_workflow(result.workflow).definition


FAN_OUT = """steps:
  first: {type: agent, prompt: p}
  left: {type: agent, after: [first], prompt: "{{ steps.first.output.text }}"}
  right: {type: tool, after: [first], tool: echo, args: {x: 1}}
  join: {type: agent, after: [left, right], prompt: p}
"""


def test_a_branch_whose_one_step_fails_the_run_hands_its_failure_to_the_tail_outside() -> None:
    definition = _definition(FAN_OUT)
    parallel = _parallel(definition)
    # The Parallel catches each branch's failure where the step's record goes, into the
    # machine's one tail, which unwraps it (contract.errors.BRANCH_FAILED).
    assert parallel["Catch"] == [
        {
            "ErrorEquals": [f"switchyard.branch_failed:{step}"],
            "ResultPath": f"$.steps.{step}",
            "Next": "on error",
        }
        for step in ("left", "right")
    ]
    table = definition["States"]["on error"]["Parameters"]["Payload"]["steps"]
    assert table["left"]["reads"] == ["first"] and table["left"]["parks"] is False
    for branch in parallel["Branches"]:
        states = branch["States"]
        step = branch["StartAt"]
        # No tail in the branch: a Fail that names the step, and the gate a pause needs.
        assert not any(name.startswith(("on error", "dead letter")) for name in states)
        (fail,) = [s for s in states.values() if s["Type"] == "Fail"]
        assert fail["Error"] == f"switchyard.branch_failed:{step}"
        assert fail["CausePath"] == f"States.JsonToString($.steps.{step})"
        assert catches(states[step])["States.ALL"] in states
        assert catches(states[step])["budget"] != "on error"  # the gate stays in the branch


@pytest.mark.parametrize(
    "change",
    [
        ('prompt: "{{ steps.first.output.text }}"}', "prompt: p, on_error: continue}"),
        (
            'prompt: "{{ steps.first.output.text }}"}',
            "prompt: p, fallback: spare}\n  spare: {type: agent, prompt: s}",
        ),
    ],
    ids=["continue", "fallback"],
)
def test_a_branch_that_goes_on_after_a_failure_keeps_its_own_tail(change: tuple[str, str]) -> None:
    definition = _definition(FAN_OUT.replace(*change))
    parallel = _parallel(definition)
    assert [rule["ErrorEquals"] for rule in parallel["Catch"]] == [
        ["switchyard.branch_failed:right"]
    ]
    left = parallel["Branches"][0]["States"]
    assert "on error (2)" in left or "on error" in left


def test_a_branch_step_that_reads_a_record_of_its_branch_keeps_its_own_tail() -> None:
    """Its dead letter carries the records it read, which only its branch has."""
    routed = """steps:
  first: {type: agent, prompt: p}
  pick:
    type: router
    after: [first]
    strategy: rule
    routes: [{when: 'steps.first.output.text == "x"', to: left}]
  left: {type: agent, after: [pick], prompt: p}
  right: {type: tool, after: [first], tool: echo, args: {x: 1}}
  join: {type: agent, after: [left, right], prompt: p}
"""
    parallel = _parallel(_definition(routed))
    assert [rule["ErrorEquals"] for rule in parallel["Catch"]] == [
        ["switchyard.branch_failed:right"]
    ]
    (picked,) = [b["States"] for b in parallel["Branches"] if b["StartAt"] == "pick"]
    assert any(name.startswith("on error") for name in picked)


def test_a_failure_handed_up_to_a_block_with_no_other_step_goes_straight_to_its_dead_letter() -> (
    None
):
    definition = _definition(
        """steps:
  left: {type: agent, prompt: p}
  right: {type: tool, tool: echo, args: {x: 1}, on_error: continue}
"""
    )
    states = definition["States"]
    parallel = _parallel(definition)
    assert [rule["Next"] for rule in parallel["Catch"]] == ["on error"]
    assert "after error" not in states  # one step in this block's tail: no dispatch
    assert states["on error"]["Next"] == "dead letter"
    assert states["dead letter"]["Next"] == "fail"
    (right,) = [b["States"] for b in parallel["Branches"] if b["StartAt"] == "right"]
    assert any(name.startswith("on error") for name in right)  # continue: its own tail


def test_a_gate_that_comes_to_serve_a_kind_not_foreseen_is_renamed_and_rewired() -> None:
    """The kinds a block's gate serves are worked out before its steps are compiled, so that it
    is named once; should a step need another, the gate becomes `operator gate` all the same."""
    from switchyard.compile.fragments import Block, Names
    from switchyard.compile.steps.failure import Tail
    from switchyard.compile.steps.unit import Unit
    from switchyard.contract import GateKind

    result = validate_text(HEAD + "steps:\n  a: {type: agent, prompt: p}\n")
    assert result.workflow is not None
    block = Block(Names(), failing_steps=2)  # gate_kinds left empty: nothing foreseen
    tail = Tail(Unit(result.workflow, "a", block), shared=True)
    tail._open("budget", tail.shared_gate(GateKind.BUDGET))
    assert "budget gate" in block.states
    tail._open("human", tail.shared_gate(GateKind.HUMAN))
    assert "budget gate" not in block.states
    payload = block.states["operator gate"]["Parameters"]["Payload"]
    assert payload["kind.$"] == "$.error.action" and "kind" not in payload
    assert [rule["Next"] for rule in tail.opens] == ["operator gate"]
