"""The condition evaluator follows Step Functions Choice semantics."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchyard.conditions.evaluate import evaluate

CTX: dict[str, Any] = {
    "args": {"amount": 150, "currency": "EUR", "ok": True, "note": None, "tags": ["a", "b"]},
    "inputs": {"tier": "pro", "limit": 100.5, "name": "INV-*42"},
    "run": {"id": "r1"},
}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("args.amount > 100", True),
        ("args.amount > 150", False),
        ("args.amount >= 150", True),
        ("args.amount < inputs.limit", False),
        ("args.amount == 150.0", True),
        ('args.currency == "EUR"', True),
        ('args.currency != "USD"', True),
        ('args.currency < "FUR"', True),
        ("args.ok == true", True),
        ("args.ok != false", True),
        ("args.ok > false", False),
        ('args.amount == "150"', False),
        ('args.amount != "150"', False),
        ("args.ok == 1", False),
        ("args.missing == 1", False),
        ("args.missing != 1", False),
        ("not args.missing == 1", True),
        ('inputs.tier in ["pro", "enterprise"]', True),
        ('inputs.tier in ["free"]', False),
        ('args.currency matches "E*"', True),
        ('args.currency matches "US*"', False),
        ('inputs.name matches "INV-\\\\**"', True),
        ('inputs.name matches "INV-\\\\*"', False),
        ('args.amount matches "1*"', False),
        ("args.note is null", True),
        ("args.note is not null", False),
        ("args.missing is null", False),
        ("args.missing is not null", False),
        ("args.amount is not null", True),
        ("args.note exists", True),
        ("args.missing exists", False),
        ('args.tags[1] == "b"', True),
        ('args.tags[5] == "b"', False),
        ("args.tags == 1", False),
        ('args.amount > 100 and inputs.tier == "pro"', True),
        ('args.amount > 1000 or inputs.tier == "pro"', True),
        ('not (args.amount > 1000 or inputs.tier == "free")', True),
        ("args.note == null", True),
    ],
)
def test_condition_follows_step_functions_semantics(condition: str, expected: bool) -> None:
    assert evaluate(condition, CTX) is expected


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.text(alphabet="ab", max_size=2)
)


@given(left=scalars, right=scalars)
def test_values_of_different_types_never_compare(left: Any, right: Any) -> None:
    ctx = {"args": {"l": left, "r": right}}
    same_type = type(left) is type(right)
    for op in ("==", "!=", "<", "<=", ">", ">="):
        result = evaluate(f"args.l {op} args.r", ctx)
        if not same_type:
            assert result is False
    if same_type:
        assert evaluate("args.l == args.r", ctx) is (left == right)
        assert evaluate("args.l != args.r", ctx) is (left != right)
