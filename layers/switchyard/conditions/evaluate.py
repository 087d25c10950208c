"""Evaluate a condition in Python, as the Step Functions Choice rules it compiles to would.

The compiler turns conditions into Choice rules; the step runtime evaluates some itself (a tool's
`require_approval_if`, over `{args, inputs, run}`). Both must agree, so this follows Step Functions:

- a comparison of values of different types is false (for `!=` too: it compiles to a typed test
  and a negated equality, so `1 != "1"` is false), and so is a comparison with a missing path;
- numbers compare as numbers (booleans are not numbers), strings by code point, booleans and
  null only with `==` and `!=`; objects and lists never compare;
- `matches` is `StringMatches`: `*` matches any run of characters, `\\*` a literal star;
- `exists` is `IsPresent`; `is null` needs the path present and null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from switchyard.conditions.ast import (
    And,
    Compare,
    Exists,
    Expr,
    In,
    IsNull,
    Literal,
    Matches,
    Not,
    Operand,
    Or,
    Path,
)
from switchyard.conditions.parser import parse_condition
from switchyard.conditions.string_matches import string_matches

_MISSING = object()


def evaluate(expr: Expr | str, context: Mapping[str, Any]) -> bool:
    """True when the condition holds over `context` (a mapping of root names to values)."""
    tree = parse_condition(expr) if isinstance(expr, str) else expr
    return _eval(tree, context)


def resolve_path(path: Path, context: Mapping[str, Any]) -> Any:
    """The value at `path`, or `MISSING` when any part of it is absent."""
    if path.root not in context:
        return _MISSING
    value: Any = context[path.root]
    for part in path.parts:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return _MISSING
            value = value[part]
        else:
            if not isinstance(value, Mapping) or part not in value:
                return _MISSING
            value = value[part]
    return value


MISSING = _MISSING


def _eval(expr: Expr, ctx: Mapping[str, Any]) -> bool:
    if isinstance(expr, And):
        return all(_eval(item, ctx) for item in expr.items)
    if isinstance(expr, Or):
        return any(_eval(item, ctx) for item in expr.items)
    if isinstance(expr, Not):
        return not _eval(expr.item, ctx)
    if isinstance(expr, Compare):
        return _compare(expr.op, _operand(expr.left, ctx), _operand(expr.right, ctx))
    if isinstance(expr, In):
        value = resolve_path(expr.path, ctx)
        return any(_compare("==", value, literal.value) for literal in expr.values)
    if isinstance(expr, Matches):
        value = resolve_path(expr.path, ctx)
        return isinstance(value, str) and string_matches(expr.pattern, value)
    if isinstance(expr, Exists):
        return resolve_path(expr.path, ctx) is not _MISSING
    if isinstance(expr, IsNull):
        value = resolve_path(expr.path, ctx)
        if value is _MISSING:
            return False
        return (value is not None) if expr.negated else (value is None)
    raise TypeError(f"not a condition: {expr!r}")


def _operand(operand: Operand, ctx: Mapping[str, Any]) -> Any:
    if isinstance(operand, Literal):
        return operand.value
    return resolve_path(operand, ctx)


def _kind(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None  # objects, lists, missing: never comparable


def _compare(op: str, left: Any, right: Any) -> bool:
    kind = _kind(left)
    if kind is None or kind != _kind(right):
        return False
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if kind not in ("number", "string"):
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)
