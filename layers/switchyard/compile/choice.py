"""Conditions become Choice rules, with the workflow format's semantics on Step Functions.

- A comparison of values of different types is false, `!=` included (`1 != "1"` is false): each
  comparison is guarded by a type test (`IsString`, `IsNumeric`, `IsBoolean`) and by `IsPresent`,
  because Step Functions fails a Choice whose `Variable` does not exist. A comparison with a
  missing path is false.
- `x is null` holds when x is present and null; `x is not null` when present and not null;
  `x exists` when present. `x == null` is `x is null`.

switchyard.conditions.evaluate says the same in Python; tests check both on moto.
"""

from __future__ import annotations

from typing import Any

from switchyard.conditions import (
    And,
    Compare,
    Exists,
    Expr,
    In,
    IsNull,
    Literal,
    Matches,
    Not,
    Or,
    Path,
)

Rule = dict[str, Any]

ROOTS = {
    "inputs": "$.inputs",
    "steps": "$.steps",
    "run": "$.run",
    "item": "$.scope.item",
    "index": "$.scope.index",
    "iteration": "$.scope.iteration",
    "output": "$.scope.result.output",
    "previous": "$.scope.previous",
}

_NEVER: Rule = {"Not": {"Variable": "$", "IsPresent": True}}
"""A rule that never holds (`$` is always present)."""

_TESTS = {"string": "IsString", "number": "IsNumeric", "boolean": "IsBoolean"}
_OPERATOR = {
    ("string", "=="): "StringEquals",
    ("string", "<"): "StringLessThan",
    ("string", "<="): "StringLessThanEquals",
    ("string", ">"): "StringGreaterThan",
    ("string", ">="): "StringGreaterThanEquals",
    ("number", "=="): "NumericEquals",
    ("number", "<"): "NumericLessThan",
    ("number", "<="): "NumericLessThanEquals",
    ("number", ">"): "NumericGreaterThan",
    ("number", ">="): "NumericGreaterThanEquals",
    ("boolean", "=="): "BooleanEquals",
}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def jsonpath(path: Path, roots: dict[str, str] = ROOTS) -> str:
    out = roots[path.root]
    for part in path.parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def choice_rule(expr: Expr, roots: dict[str, str] = ROOTS) -> Rule:
    """A Choice rule (without `Next`) that is true exactly when `expr` holds."""
    if isinstance(expr, And):
        return {"And": [choice_rule(item, roots) for item in expr.items]}
    if isinstance(expr, Or):
        return {"Or": [choice_rule(item, roots) for item in expr.items]}
    if isinstance(expr, Not):
        return negate(choice_rule(expr.item, roots))
    if isinstance(expr, Exists):
        return {"Variable": jsonpath(expr.path, roots), "IsPresent": True}
    if isinstance(expr, IsNull):
        variable = jsonpath(expr.path, roots)
        null: Rule = {"Variable": variable, "IsNull": True}
        return {
            "And": [
                {"Variable": variable, "IsPresent": True},
                negate(null) if expr.negated else null,
            ]
        }
    if isinstance(expr, Matches):
        variable = jsonpath(expr.path, roots)
        return _guarded(variable, "string", {"Variable": variable, "StringMatches": expr.pattern})
    if isinstance(expr, In):
        return _any_of([_compare_literal(expr.path, "==", value, roots) for value in expr.values])
    return _compare(expr, roots)


def negate(rule: Rule) -> Rule:
    if set(rule) == {"Not"}:
        inner: Rule = rule["Not"]
        return inner
    return {"Not": rule}


def _any_of(rules: list[Rule]) -> Rule:
    return rules[0] if len(rules) == 1 else {"Or": rules}


def _compare(expr: Compare, roots: dict[str, str]) -> Rule:
    left, right, op = expr.left, expr.right, expr.op
    if isinstance(left, Literal) and isinstance(right, Path):
        left, right, op = right, left, _FLIPPED[op]  # type: ignore[assignment]
    assert isinstance(left, Path), "the validator refuses comparisons without a path"
    if isinstance(right, Literal):
        return _compare_literal(left, op, right, roots)
    return _compare_paths(left, op, right, roots)


def _compare_literal(path: Path, op: str, literal: Literal, roots: dict[str, str]) -> Rule:
    variable = jsonpath(path, roots)
    value = literal.value
    if value is None:
        if op == "==":
            return choice_rule(IsNull(path, negated=False), roots)
        return _NEVER  # `!= null` compares with a null of the same type: never true
    kind = _kind(value)
    if op == "!=":
        equal = {"Variable": variable, _OPERATOR[(kind, "==")]: value}
        return _guarded(variable, kind, negate(equal))
    operator = _OPERATOR[(kind, op)]
    return _guarded(variable, kind, {"Variable": variable, operator: value})


def _compare_paths(left: Path, op: str, right: Path, roots: dict[str, str]) -> Rule:
    a, b = jsonpath(left, roots), jsonpath(right, roots)
    options: list[Rule] = []
    for kind in ("string", "number", "boolean"):
        operator = _OPERATOR.get((kind, "==" if op == "!=" else op))
        if operator is None:
            continue
        comparison: Rule = {"Variable": a, f"{operator}Path": b}
        options.append(
            {
                "And": [
                    {"Variable": a, _TESTS[kind]: True},
                    {"Variable": b, _TESTS[kind]: True},
                    negate(comparison) if op == "!=" else comparison,
                ]
            }
        )
    present = [{"Variable": a, "IsPresent": True}, {"Variable": b, "IsPresent": True}]
    return {"And": [*present, _any_of(options)]}


def _guarded(variable: str, kind: str, comparison: Rule) -> Rule:
    return {
        "And": [
            {"Variable": variable, "IsPresent": True},
            {"Variable": variable, _TESTS[kind]: True},
            comparison,
        ]
    }


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"
