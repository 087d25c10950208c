from __future__ import annotations

import pytest

from switchyard.conditions import (
    And,
    Compare,
    ConditionError,
    Exists,
    In,
    IsNull,
    Literal,
    Matches,
    Not,
    Or,
    Path,
    parse_condition,
    parse_path,
)


def test_comparison_of_path_and_string() -> None:
    expr = parse_condition('steps.classify.output.label != "other"')
    assert expr == Compare(
        "!=", Path("steps", ("classify", "output", "label"), 1), Literal("other", 32)
    )


def test_precedence_not_then_and_then_or() -> None:
    expr = parse_condition("not a == 1 and b == 2 or c == 3")
    assert isinstance(expr, Or)
    first, second = expr.items
    assert isinstance(first, And) and isinstance(first.items[0], Not)
    assert isinstance(second, Compare)


def test_parentheses_group() -> None:
    expr = parse_condition("a == 1 and (b == 2 or c == 3)")
    assert isinstance(expr, And) and isinstance(expr.items[1], Or)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('inputs.tier in ["pro", "enterprise"]', In),
        ('steps.a.output.id matches "INV-*"', Matches),
        ("steps.a.output exists", Exists),
        ("steps.a.output is null", IsNull),
        ("steps.a.output is not null", IsNull),
    ],
)
def test_path_tests(text: str, kind: type) -> None:
    assert isinstance(parse_condition(text), kind)


def test_is_not_null_is_negated() -> None:
    expr = parse_condition("x is not null")
    assert isinstance(expr, IsNull) and expr.negated


def test_literals_and_indexes() -> None:
    expr = parse_condition("steps.a.output.items[2].score >= -0.5")
    assert isinstance(expr, Compare)
    assert expr.left == Path("steps", ("a", "output", "items", 2, "score"), 1)
    assert expr.right == Literal(-0.5, 34)
    assert parse_condition("x == true").right == Literal(True, 6)  # type: ignore[union-attr]
    assert parse_condition("x == null").right == Literal(None, 6)  # type: ignore[union-attr]


def test_single_quoted_strings() -> None:
    expr = parse_condition("x == 'a \"b\"'")
    assert isinstance(expr, Compare) and expr.right == Literal('a "b"', 6)


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("", 1),
        ("steps.x ==", 11),
        ("a b", 3),
        ("1 in [1]", 1),
        ("x matches y", 11),
        ("x in []", 7),
        ("x == 1 and", 11),
        ("(x == 1", 8),
        ("x == 1 $", 8),
        ("x.[0] == 1", 3),
    ],
)
def test_errors_carry_a_column(text: str, column: int) -> None:
    with pytest.raises(ConditionError) as caught:
        parse_condition(text)
    assert caught.value.column == column


def test_jsonpath_of_a_path() -> None:
    path = parse_path("steps.classify.output.scores[0]")
    assert path.jsonpath() == "$.steps.classify.output.scores[0]"
    assert path.text == "steps.classify.output.scores[0]"


def test_parse_path_rejects_expressions() -> None:
    with pytest.raises(ConditionError):
        parse_path("a == 1")
