"""Template references: the fast scanner and Jinja2's own parser must agree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchyard.templates import Reference, TemplateError, template_info
from switchyard.templates.references import _parse_with_jinja, _scan


def refs(text: str) -> list[str]:
    return [r.text for r in template_info(text).references]


def test_plain_text_has_no_references() -> None:
    info = template_info("no templates here")
    assert info.is_static and info.references == ()


def test_paths_with_filters_and_defaults() -> None:
    text = "{{ steps.approve.output.edits.draft | default(steps.draft.output.text) }}"
    assert refs(text) == ["steps.approve.output.edits.draft", "steps.draft.output.text"]
    assert template_info(text).single_expression


def test_quoted_keys_and_indexes() -> None:
    assert refs('{{ steps.x.output["a b"][0].c | default("x.y") }}') == ["steps.x.output.a b[0].c"]


def test_loop_variables_are_not_references() -> None:
    text = "{% for doc in steps.each.output %}{{ doc.id }} {{ inputs.batch }}{% endfor %}"
    assert refs(text) == ["steps.each.output", "inputs.batch"]


def test_method_calls_are_not_fields() -> None:
    assert refs("{% for k, v in inputs.data.items() %}{{ k }}{% endfor %}") == ["inputs.data"]


@pytest.mark.parametrize(
    "text", ["{{ x | nosuch }}", "{{ x ", "{% if %}", "{{ a + }}", "{{ x is nosuch }}"]
)
def test_bad_templates_raise(text: str) -> None:
    with pytest.raises(TemplateError):
        template_info(text)


_names = st.sampled_from(["inputs", "steps", "run", "item", "joined"])
_fields = st.lists(st.sampled_from(["a", "output", "text", "b_2", 0, 3]), max_size=4)
_filters = st.lists(
    st.sampled_from(["| upper", "| default('x')", "| length", "| tojson"]), max_size=2
)


@st.composite
def simple_templates(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        root = draw(_names)
        path = root + "".join(f"[{f}]" if isinstance(f, int) else f".{f}" for f in draw(_fields))
        parts.append(f"text {{{{ {path} {' '.join(draw(_filters))} }}}}")
    return " ".join(parts)


@settings(max_examples=200, deadline=None)
@given(simple_templates())
def test_scanner_agrees_with_jinja(text: str) -> None:
    fast = _scan(text)
    assert fast is not None
    assert list(fast) == list(_parse_with_jinja(text))


def test_reference_text() -> None:
    assert Reference("steps", ("a", "output", 0)).text == "steps.a.output[0]"
