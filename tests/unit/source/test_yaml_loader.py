from __future__ import annotations

from switchyard.diagnostics import Code
from switchyard.source import load_document


def test_every_node_has_its_line() -> None:
    document = load_document("a: 1\nsteps:\n  x:\n    after: [p, q]\n    args:\n      - z\n")
    assert document.line_of(("steps", "x")) == 3
    assert document.line_of(("steps", "x", "after", 1)) == 4
    assert document.line_of(("steps", "x", "args", 0)) == 6
    assert document.line_of(("steps", "x", "missing", "deeper")) == 3  # nearest ancestor


def test_scalars_follow_yaml_1_2_not_1_1() -> None:
    text = "on: [timeout]\nyes: no\nn: 0x1F\nf: 1.5e3\nnull_: ~\nb: True\nd: 2024-01-01\ns: '1'\n"
    assert load_document(text).data == {
        "on": ["timeout"],
        "yes": "no",
        "n": 31,
        "f": 1500.0,
        "null_": None,
        "b": True,
        "d": "2024-01-01",
        "s": "1",
    }


def test_explicit_string_tag_keeps_text() -> None:
    assert load_document("v: !!str 12\n").data == {"v": "12"}


def test_duplicate_step_id_is_an_error_and_the_first_is_kept() -> None:
    document = load_document("steps:\n  a: {type: tool}\n  a: {type: agent}\n", file="w.yaml")
    (problem,) = document.diagnostics
    assert problem.code is Code.DUPLICATE_ID
    assert (problem.line, problem.path) == (3, "steps.a")
    assert "first defined on line 2" in problem.message
    assert document.data == {"steps": {"a": {"type": "tool"}}}


def test_duplicate_plain_key_is_a_parse_error() -> None:
    (problem,) = load_document("a: 1\nb: 2\na: 3\n").diagnostics
    assert (problem.code, problem.line, problem.path) == (Code.PARSE, 3, "a")


def test_syntax_error_has_a_line() -> None:
    document = load_document("a: 1\nb: [1, 2\nc: 3\n", file="f.yaml")
    (problem,) = document.diagnostics
    assert problem.code is Code.PARSE and problem.line >= 2 and document.data is None


def test_json_is_read_with_lines_too() -> None:
    document = load_document('{\n  "name": "x",\n  "steps": {"a": {"after": []}}\n}\n')
    assert document.data == {"name": "x", "steps": {"a": {"after": []}}}
    assert document.line_of(("steps", "a")) == 3


def test_merge_keys_fill_without_overriding() -> None:
    text = "base: &b {x: 1, y: 2}\nitem:\n  <<: *b\n  y: 3\n"
    assert load_document(text).data["item"] == {"x": 1, "y": 3}


def test_empty_file_is_a_parse_error() -> None:
    assert load_document("").diagnostics[0].code is Code.PARSE


def test_aliases_that_expand_past_the_limit_are_refused_not_built() -> None:
    rows = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for name, prev in zip("bcdefghi", "abcdefgh", strict=True):
        rows.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    document = load_document("\n".join(rows) + "\n")
    assert document.data is None
    [problem] = document.diagnostics
    assert problem.code == Code.PARSE
    assert "expands to more than 200,000 values" in problem.message
