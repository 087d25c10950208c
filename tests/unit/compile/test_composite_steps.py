"""Maps and loops: their `timeout` (a deadline checked before each item or iteration starts),
their `output_schema` (checked on their output) and their `budget` (shared by the items or
iterations)."""

from __future__ import annotations

from typing import Any

from switchyard.compile import compile_workflow
from switchyard.engine.asl.definition import parse_definition
from switchyard.validate import validate_text

HEAD = """
switchyard: 1
name: composite
version: 1
defaults: {model: m}
inputs: {docs: {type: array, items: {type: string}, maxItems: 5}}
"""


def compiled(steps: str) -> dict[str, Any]:
    result = validate_text(HEAD + steps)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    definition = compile_workflow(result.workflow).definition
    parse_definition(definition)  # the local engine accepts it, as Step Functions must
    return definition


def test_a_loop_timeout_is_a_deadline_checked_before_each_further_iteration() -> None:
    states = compiled(
        """steps:
  refine:
    type: loop
    max_iterations: 4
    timeout: 90s
    until: output.done == true
    step: {type: agent, prompt: "{{ iteration }}", output_schema: {type: object}}
"""
    )["States"]
    deadline = states["refine:deadline"]
    assert deadline["Parameters"]["FunctionName"] == "${RenderFunctionArn}"
    assert deadline["Parameters"]["Payload"] == {
        "helper": "deadline",
        "start.$": "$$.State.EnteredTime",
        "seconds": 90,
    }
    assert deadline["ResultPath"] == "$.deadline"
    assert deadline["Next"] == "refine:first iteration"
    assert deadline["Catch"][0]["Next"] == "on error"  # the loop's failure path
    assert states["refine:until"]["Default"] == "refine:in time?"
    check = states["refine:in time?"]
    assert check["Choices"] == [
        {
            "Variable": "$$.State.EnteredTime",
            "TimestampGreaterThanEqualsPath": "$.deadline.at",
            "Next": "refine:timed out",
        }
    ]
    assert check["Default"] == "refine:next iteration"
    timed_out = states["refine:timed out"]
    assert timed_out["Parameters"]["Error"] == "timeout"
    assert "ran past its timeout of 90 s" in timed_out["Parameters"]["Cause.$"]
    assert timed_out["ResultPath"] == "$.steps.refine" and timed_out["Next"] == "on error"
    # The iteration's Task keeps its own limits (the step's or the defaults' timeout).
    assert "TimeoutSeconds" not in states["refine"]


def test_a_loop_without_timeout_has_no_deadline() -> None:
    states = compiled(
        """steps:
  refine: {type: loop, max_iterations: 2, step: {type: agent, prompt: x}}
"""
    )["States"]
    assert not [name for name in states if "deadline" in name or "in time" in name]
    assert states["refine:until"]["Default"] == "refine:next iteration"


def test_a_map_timeout_is_a_deadline_each_item_checks_before_it_starts() -> None:
    states = compiled(
        """steps:
  each:
    type: map
    items: "{{ inputs.docs }}"
    timeout: 5m
    step: {type: agent, prompt: "{{ item }}"}
"""
    )["States"]
    assert states["each:deadline"]["Next"] == "each (2)"
    mapped = states["each (2)"]
    assert "TimeoutSeconds" not in mapped  # not a field of a Map state
    assert mapped["ItemSelector"]["scope"]["deadline.$"] == "$.deadline.at"
    processor = mapped["ItemProcessor"]
    assert processor["StartAt"] == "each:in time?"
    check = processor["States"]["each:in time?"]
    assert check["Choices"][0]["TimestampGreaterThanEqualsPath"] == "$.scope.deadline"
    assert check["Default"] == "each"
    stop = processor["States"][check["Choices"][0]["Next"]]
    assert stop["Type"] == "Fail" and stop["Error"] == "timeout"
    # Whatever fails the map, its deadline's Task included, takes the map's failure path.
    assert states["each:deadline"]["Catch"][0]["Next"] == "on error"
    assert mapped["Catch"][0]["Next"] == "on error"


def test_a_map_with_rendered_items_renders_them_before_its_deadline() -> None:
    states = compiled(
        """steps:
  each:
    type: map
    items: "{{ inputs.docs | reverse | list }}"
    timeout: 60
    step: {type: agent, prompt: "{{ item }}"}
"""
    )["States"]
    assert states["each:items"]["Next"] == "each:deadline"
    assert states["each:items"]["Catch"][0]["Next"] == "on error"
    assert states["each (2)"]["ItemsPath"] == "$.rendered.value"


def test_map_and_loop_outputs_are_checked_against_their_output_schema() -> None:
    schema = {"type": "array", "minItems": 1}
    states = compiled(
        f"""steps:
  each:
    type: map
    items: "{{{{ inputs.docs }}}}"
    output_schema: {schema}
    step: {{type: agent, prompt: "{{{{ item }}}}"}}
  refine:
    type: loop
    max_iterations: 2
    output_schema: {{type: object, required: [text]}}
    step: {{type: agent, prompt: x}}
"""
    )["States"]

    def branch_states(name: str) -> dict[str, Any]:
        (parallel,) = [s for s in states.values() if s["Type"] == "Parallel"]
        for branch in parallel["Branches"]:
            if name in branch["States"]:
                return dict(branch["States"])
        raise AssertionError(name)

    each = branch_states("each:check output")
    assert each["each (2)"]["Next"] == "each:check output"
    check = each["each:check output"]
    assert check["Parameters"]["Payload"] == {
        "helper": "check_output",
        "step_id": "each",
        "value.$": "$.steps.each.output",
        "output_schema": schema,
    }
    assert check["ResultPath"] is None
    assert check["Catch"][0]["Next"] == "on error"
    refine = branch_states("refine:check output")
    assert refine["refine:done"]["Next"] == "refine:check output"
    assert refine["refine:check output"]["Catch"][0]["Next"].startswith("on error")  # its branch's


def test_a_map_or_loop_budget_travels_with_its_steps_payload() -> None:
    states = compiled(
        """steps:
  each:
    type: map
    items: "{{ inputs.docs }}"
    budget: {max_cost_usd: 0.5}
    step: {type: agent, prompt: "{{ item }}", budget: {max_cost_usd: 0.1}}
  refine:
    type: loop
    max_iterations: 2
    budget: {max_tokens: 5000}
    step: {type: tool, tool: http.request, args: {url: "https://x.example"}}
  plain: {type: agent, prompt: x}
"""
    )["States"]
    found: dict[str, Any] = {}

    def collect(block: dict[str, Any]) -> None:
        for name, state in block.items():
            found[name] = state
            for branch in state.get("Branches", []):
                collect(branch["States"])
            if "ItemProcessor" in state:
                collect(state["ItemProcessor"]["States"])

    collect(states)
    each = found["each"]["Parameters"]["Payload"]
    assert each["parent_budget"] == {"max_cost_usd": 0.5}
    assert each["step"]["budget"] == {"max_cost_usd": 0.1}  # the item's own, besides
    assert found["refine"]["Parameters"]["Payload"]["parent_budget"] == {"max_tokens": 5000}
    assert "parent_budget" not in found["plain"]["Parameters"]["Payload"]
