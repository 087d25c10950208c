"""JSON that PostgreSQL and Python can hold. The engine stores inputs, outputs and ids in jsonb
and text columns, and PostgreSQL refuses two things JSON can spell: the NUL character (`\\u0000`,
which jsonb and text cannot hold) and a lone UTF-16 surrogate (`\\ud800`, no Unicode character at
all, which UTF-8 cannot encode). Python's parser recurses once per nesting level. So a request's
JSON is parsed here, and refused with a reason instead of failing deep inside a handler:

- nesting beyond `MAX_JSON_DEPTH` levels of arrays and objects;
- a NUL or a lone surrogate in any string or object key;
- a number too large for a double (`1e400` reads as infinity, which JSON cannot write back).

Each API turns the reason into its own error: the REST API `400 invalid_json`, the Step
Functions port the error Step Functions gives for that member (InvalidExecutionInput for an
execution's input, InvalidOutput for a task's output, SerializationException for the body).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_JSON_DEPTH = 64
"""Levels of arrays and objects a request's JSON may nest (`{"a": [1]}` is 2). Step Functions
documents no depth limit; its payloads are at most 256 KiB. 64 leaves every real payload room and
keeps Python's parser and PostgreSQL's jsonb functions far from their recursion limits."""

_UNHOLDABLE = re.compile("[\x00\ud800-\udfff]")


class UnholdableJsonError(ValueError):
    """JSON text that is not JSON, or that PostgreSQL or Python cannot hold; says which."""


def loads_holdable(text: str | bytes) -> Any:
    """The JSON value of `text`; UnholdableJsonError when it is not JSON (NaN and Infinity are not
    JSON either), nests too deep, or holds a NUL or a lone surrogate."""
    value = loads_bounded(text)
    check_holdable(value)
    return value


def loads_bounded(text: str | bytes) -> Any:
    """The JSON value of `text`, nesting at most `MAX_JSON_DEPTH` levels; strings are not
    checked (a caller that checks each member itself, naming it, uses this)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise UnholdableJsonError("it is not UTF-8 text") from None
    _check_depth(text)
    try:
        value = json.loads(text, parse_constant=_not_json)
    except RecursionError:  # unreachable after _check_depth; kept as a guard
        raise UnholdableJsonError(f"it nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise UnholdableJsonError(str(exc)) from None
    return value


def check_holdable(value: Any) -> None:
    """UnholdableJsonError when a string or key of `value` holds a NUL or a lone surrogate, or it
    nests deeper than `MAX_JSON_DEPTH` (iterative: a deep value cannot exhaust the stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise UnholdableJsonError("a number is too large to hold (it reads as infinity)")
        elif isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise UnholdableJsonError(f"it nests deeper than {MAX_JSON_DEPTH} levels")
            if isinstance(item, dict):
                for key, member in item.items():
                    _check_text(str(key))
                    stack.append((member, depth + 1))
            else:
                stack.extend((member, depth + 1) for member in item)


def holdable_text_problem(text: str) -> str | None:
    """Why `text` (an id, a name, a query value) cannot be stored, or None."""
    found = _UNHOLDABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "it contains a NUL character (\\u0000), which PostgreSQL cannot store"
    return (
        f"it contains a lone surrogate (\\u{ord(found.group()):04x}), which is not a Unicode"
        " character"
    )


def _check_text(text: str) -> None:
    problem = holdable_text_problem(text)
    if problem is not None:
        raise UnholdableJsonError(problem)


def _check_depth(text: str) -> None:
    """Nesting counted on the text before parsing. Brackets inside strings do not count: the scan
    skips strings with a regular expression, so it is linear and runs at C speed."""
    depth = 0
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise UnholdableJsonError(f"it nests deeper than {MAX_JSON_DEPTH} levels")
        elif char in "]}":
            depth -= 1


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")  # Python reads NaN and Infinity; JSON not
