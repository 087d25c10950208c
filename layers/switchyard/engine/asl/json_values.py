"""JSON value predicates with JSON's types, not Python's (`True` is not the number 1)."""

from __future__ import annotations

import json
import math
from typing import Any


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_integral(value: Any) -> bool:
    """A JSON number without a fractional part (`3` and `3.0`)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def java_round(value: float) -> int:
    """Java's `Math.round`: halves round up (towards positive infinity), as Step Functions does."""
    return math.floor(value + 0.5)


def identity_key(value: Any) -> str:
    """A key equal for equal JSON values: object key order does not matter, `1` and `1.0` differ
    (Jackson's node equality, which Step Functions uses)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_equal(left: Any, right: Any) -> bool:
    """Structural JSON equality where booleans never equal numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if is_number(left) and is_number(right):
        return bool(left == right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and bool(left == right)
