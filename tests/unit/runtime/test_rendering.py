"""Rendering templates, joins and the step context."""

from __future__ import annotations

from typing import Any

import pytest

from switchyard.contract import RunContext, StepContext, StepErrorName
from switchyard.contract.step_errors import TemplateRenderError
from switchyard.runtime.rendering import joined, render, render_text, template_context

CTX: dict[str, Any] = {
    "inputs": {"body": "hello", "n": 3},
    "steps": {
        "split": {"status": "completed", "output": {"parts": [1, 2, 3], "meta": {"a": 1}}},
        "research": {"status": "skipped", "output": None},
    },
}


def test_single_expression_keeps_native_type() -> None:
    assert render("{{ steps.split.output.parts }}", CTX) == [1, 2, 3]
    assert render("  {{ inputs.n + 1 }} ", CTX) == 4
    assert render("{{ steps.split.output.meta }}", CTX) == {"a": 1}


def test_other_strings_render_to_text_with_objects_as_json() -> None:
    assert render("n={{ inputs.n }}", CTX) == "n=3"
    assert render("meta: {{ steps.split.output.meta }}", CTX) == 'meta: {"a": 1}'
    assert render("plain text", CTX) == "plain text"


def test_nested_values_render_recursively() -> None:
    value = {"a": ["{{ inputs.body }}", {"b": "{{ inputs.n }}"}], "c": 5}
    assert render(value, CTX) == {"a": ["hello", {"b": 3}], "c": 5}


@pytest.mark.parametrize(
    "template",
    ["{{ inputs.nope }}", "x {{ inputs.nope }}", "{{ steps.research.output.text }}", "{{ nope }}"],
)
def test_undefined_names_are_template_errors(template: str) -> None:
    with pytest.raises(TemplateRenderError) as info:
        render(template, CTX)
    assert info.value.name is StepErrorName.TEMPLATE


def test_default_guards_a_skipped_step() -> None:
    assert render('{{ steps.research.output.text | default("none") }}', CTX) == "none"


def test_sandbox_refuses_attribute_tricks() -> None:
    with pytest.raises(TemplateRenderError):
        render("{{ inputs.__class__.__mro__ }}", CTX)


RECORDS: dict[str, Any] = {
    "a": {"status": "completed", "output": {"x": 1, "deep": {"p": 1, "q": 1}}},
    "b": {"status": "skipped", "output": None},
    "c": {"status": "completed", "output": {"y": 2, "deep": {"q": 2}}},
    "d": {"status": "failed", "error": {"type": "permanent"}},
    "e": {"status": "failed", "error": {"type": "permanent"}, "fallback": "f", "output": {"z": 3}},
}


def test_joined_by_step_leaves_out_skipped_and_failed_without_fallback() -> None:
    assert joined(["a", "b", "c", "d", "e"], RECORDS, "by_step") == {
        "a": RECORDS["a"]["output"],
        "c": RECORDS["c"]["output"],
        "e": {"z": 3},
    }


def test_joined_deep_merge_later_wins() -> None:
    assert joined(["a", "b", "c"], RECORDS, "deep_merge") == {
        "x": 1,
        "y": 2,
        "deep": {"p": 1, "q": 2},
    }


def test_joined_list_and_first() -> None:
    assert joined(["b", "c", "a"], RECORDS, "list") == [
        RECORDS["c"]["output"],
        RECORDS["a"]["output"],
    ]
    assert joined(["b", "d", "c", "a"], RECORDS, "first") == RECORDS["c"]["output"]
    assert joined(["b", "d"], RECORDS, "first") is None


def test_template_context_from_step_context() -> None:
    ctx = StepContext(
        inputs={"q": "why"},
        run=RunContext(id="run-1", workflow="wf", version=2, started_at="2026-01-01T00:00:00Z"),
        steps=RECORDS,
        scope={"item": {"id": 7}, "index": 2, "iteration": 1},
    )
    out = template_context(
        ctx, after=["a", "c"], merge="list", step_input={"ask": "{{ inputs.q }} #{{ index }}"}
    )
    assert out["run"]["id"] == "run-1"
    assert out["item"] == {"id": 7}
    assert out["index"] == 2
    assert out["iteration"] == 1
    assert out["previous"] is None
    assert out["joined"] == [RECORDS["a"]["output"], RECORDS["c"]["output"]]
    assert out["input"] == {"ask": "why #2"}


def test_text_for_a_reader_writes_a_lone_expressions_value_as_json() -> None:
    context = {"inputs": {"o": {"k": "é", "b": True, "n": None}, "l": [1, "x"], "s": "plain"}}
    assert render_text("{{ inputs.o }}", context) == '{"k": "é", "b": true, "n": null}'
    assert render_text("{{ inputs.l }}", context) == '[1, "x"]'
    assert render_text("{{ inputs.o.b }}", context) == "true"
    assert render_text("{{ inputs.o.n }}", context) == "null"
    assert render_text("{{ inputs.s }}", context) == "plain"
    # The same spelling as an object inside text.
    assert render_text("o: {{ inputs.o }}", context) == 'o: {"k": "é", "b": true, "n": null}'
