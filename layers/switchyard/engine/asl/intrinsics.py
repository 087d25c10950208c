"""Evaluate intrinsic function calls with Step Functions' semantics.

Errors:
- an argument path that matches nothing fails with `States.Runtime` and the cause AWS writes
  (`The function '<call>' had the following error: The JsonPath argument for the field '<path>'
  could not be found in the input '<input>'`);
- an argument of the wrong type or value fails with `States.IntrinsicFailure` (ASL spec) and a
  cause in the same shape.

Randomness (`States.MathRandom` without a seed, `States.UUID`) comes from an injectable `Entropy`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from switchyard.engine.asl.errors import AslFailure, StatesError, to_json_text
from switchyard.engine.asl.intrinsic_parser import (
    Argument,
    Call,
    ContextPathArgument,
    Literal,
    PathArgument,
)
from switchyard.engine.asl.json_values import identity_key, is_integral, is_number, java_round
from switchyard.engine.asl.jsonpath import PathNotFoundError

MAX_STRING_INPUT = 10_000
"""Longest string States.Base64Encode, Base64Decode and Hash accept."""
MAX_ARRAY_RANGE = 1_000
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
HASH_ALGORITHMS: dict[str, Callable[[bytes], Any]] = {
    "MD5": hashlib.md5,
    "SHA-1": hashlib.sha1,
    "SHA-256": hashlib.sha256,
    "SHA-384": hashlib.sha384,
    "SHA-512": hashlib.sha512,
}


def _new_uuid() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class Entropy:
    """Where `States.MathRandom` (unseeded) and `States.UUID` get their randomness."""

    rng: random.Random = field(default_factory=random.SystemRandom)
    new_uuid: Callable[[], str] = _new_uuid


DEFAULT_ENTROPY = Entropy()


class _BadArgument(Exception):  # noqa: N818 - internal signal, becomes States.IntrinsicFailure
    pass


def evaluate_intrinsic(
    call: Call, data: Any, context: Any, entropy: Entropy = DEFAULT_ENTROPY
) -> Any:
    """The value of `call` for the state input `data` and the context object `context`."""
    try:
        return _evaluate_call(call, data, context, entropy)
    except PathNotFoundError as missing:
        raise AslFailure(
            StatesError.RUNTIME,
            f"The function '{call.text}' had the following error: The JsonPath argument for "
            f"the field '{missing.path}' could not be found in the input '{to_json_text(data)}'",
        ) from None
    except _BadArgument as bad:
        raise AslFailure(
            StatesError.INTRINSIC_FAILURE,
            f"The function '{call.text}' had the following error: {bad}",
        ) from None


def _evaluate_argument(argument: Argument, data: Any, context: Any, entropy: Entropy) -> Any:
    if isinstance(argument, Literal):
        return argument.value
    if isinstance(argument, PathArgument):
        return argument.path.evaluate(data, strict=True)
    if isinstance(argument, ContextPathArgument):
        return argument.path.evaluate(context, strict=True)
    return _evaluate_call(argument, data, context, entropy)


def _evaluate_call(call: Call, data: Any, context: Any, entropy: Entropy) -> Any:
    values = [_evaluate_argument(a, data, context, entropy) for a in call.arguments]
    if call.name == "States.Format":
        return _format(call.arguments[0], values)
    if call.name == "States.MathRandom":
        return _math_random(values, entropy)
    if call.name == "States.UUID":
        return entropy.new_uuid()
    return _FUNCTIONS[call.name](*values)


# -- argument checks ---------------------------------------------------------------------------


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise _BadArgument(f"{what} must be a string, got {to_json_text(value)}")
    return value


def _array(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _BadArgument(f"{what} must be an array, got {to_json_text(value)}")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _BadArgument(f"{what} must be a JSON object, got {to_json_text(value)}")
    return value


def _integer(value: Any, what: str) -> int:
    if not is_integral(value):
        raise _BadArgument(f"{what} must be an integer, got {to_json_text(value)}")
    return int(value)


def _rounded_integer(value: Any, what: str) -> int:
    """An integer argument where Step Functions rounds a non-integer number to the nearest."""
    if not is_number(value):
        raise _BadArgument(f"{what} must be a number, got {to_json_text(value)}")
    result = value if isinstance(value, int) else java_round(value)
    if not INT_MIN <= result <= INT_MAX:
        raise _BadArgument(f"{what} must be between {INT_MIN} and {INT_MAX}, got {result}")
    return result


def _limited(text: str, what: str) -> str:
    if len(text) > MAX_STRING_INPUT:
        raise _BadArgument(f"{what} must be at most {MAX_STRING_INPUT} characters long")
    return text


# -- the functions -----------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _format_segments(template: str, escaped: bool) -> tuple[str | None, ...]:
    """Split a format template into text pieces and `None` for each `{}` placeholder.

    A literal template (`escaped`) honours `\\{`, `\\}`, `\\'` and `\\\\`; a template read from a
    path is taken as it is.
    """
    segments: list[str | None] = []
    text: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if escaped and char == "\\" and i + 1 < len(template):
            text.append(template[i + 1])
            i += 2
        elif template.startswith("{}", i):
            segments.append("".join(text))
            segments.append(None)
            text = []
            i += 2
        else:
            text.append(char)
            i += 1
    segments.append("".join(text))
    return tuple(segments)


def format_value(value: Any) -> str:
    """How States.Format writes a value: strings bare, objects as `{k=v, ...}` (Java's maps)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={format_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _format(template_argument: Argument, values: list[Any]) -> str:
    template = _string(values[0], "The format template (first argument)")
    raw = template_argument.raw if isinstance(template_argument, Literal) else None
    segments = _format_segments(template if raw is None else raw, raw is not None)
    placeholders = len(segments) // 2
    arguments = values[1:]
    if placeholders != len(arguments):
        raise _BadArgument(
            f"the format template has {placeholders} placeholder(s) but "
            f"{len(arguments)} argument(s) were given"
        )
    parts: list[str] = []
    position = 0
    for segment in segments:
        if segment is None:
            parts.append(format_value(arguments[position]))
            position += 1
        else:
            parts.append(segment)
    return "".join(parts)


def _string_to_json(value: Any) -> Any:
    text = _string(value, "The argument")
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _BadArgument(f"the argument is not valid JSON: {error}") from None


def _json_to_string(value: Any) -> str:
    return to_json_text(value)


def _array_of(*values: Any) -> list[Any]:
    return list(values)


def _array_partition(array: Any, size: Any) -> list[list[Any]]:
    items = _array(array, "The first argument")
    chunk = _integer(size, "The chunk size")
    if chunk <= 0:
        raise _BadArgument(f"The chunk size must be a positive integer, got {chunk}")
    return [items[i : i + chunk] for i in range(0, len(items), chunk)]


def _array_contains(array: Any, value: Any) -> bool:
    key = identity_key(value)
    return any(identity_key(item) == key for item in _array(array, "The first argument"))


def _array_range(first: Any, last: Any, step: Any) -> list[int]:
    start = _integer(first, "The first argument")
    end = _integer(last, "The second argument")
    increment = _integer(step, "The step")
    if increment == 0:
        raise _BadArgument("The step (third argument) must not be 0")
    count = max(0, (end - start) // increment + 1)
    if count > MAX_ARRAY_RANGE:
        raise _BadArgument(f"The range has {count} elements; at most {MAX_ARRAY_RANGE} are allowed")
    return [start + i * increment for i in range(count)]


def _array_get_item(array: Any, index: Any) -> Any:
    items = _array(array, "The first argument")
    position = _integer(index, "The index")
    if not 0 <= position < len(items):
        raise _BadArgument(f"The index {position} is out of bounds for an array of {len(items)}")
    return items[position]


def _array_length(array: Any) -> int:
    return len(_array(array, "The argument"))


def _array_unique(array: Any) -> list[Any]:
    seen: set[str] = set()
    unique: list[Any] = []
    for item in _array(array, "The argument"):
        key = identity_key(item)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def _base64_encode(value: Any) -> str:
    text = _limited(_string(value, "The argument"), "The argument")
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _base64_decode(value: Any) -> str:
    text = _limited(_string(value, "The argument"), "The argument")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise _BadArgument("the argument is not valid base64-encoded UTF-8 text") from None


def _hash(data: Any, algorithm: Any) -> str:
    text = _limited(_string(data, "The data (first argument)"), "The data (first argument)")
    name = _string(algorithm, "The algorithm (second argument)")
    if name not in HASH_ALGORITHMS:
        raise _BadArgument(
            f"The algorithm '{name}' is not supported; use one of {', '.join(HASH_ALGORITHMS)}"
        )
    digest: str = HASH_ALGORITHMS[name](text.encode("utf-8")).hexdigest()
    return digest


def _json_merge(first: Any, second: Any, deep: Any) -> dict[str, Any]:
    left = _object(first, "The first argument")
    right = _object(second, "The second argument")
    if not isinstance(deep, bool):
        raise _BadArgument(f"The third argument must be a boolean, got {to_json_text(deep)}")
    if deep:
        raise _BadArgument(
            "Step Functions only supports shallow merging: the third argument must be false"
        )
    return {**left, **right}


def _math_random(values: list[Any], entropy: Entropy) -> int:
    start = _rounded_integer(values[0], "The start (first argument)")
    end = _rounded_integer(values[1], "The end (second argument)")
    if start >= end:
        raise _BadArgument(f"The start ({start}) must be less than the end ({end})")
    if len(values) == 3:
        seed = _rounded_integer(values[2], "The seed (third argument)")
        return random.Random(seed).randrange(start, end)
    return entropy.rng.randrange(start, end)


def _math_add(first: Any, second: Any) -> int:
    return _rounded_integer(first, "The first argument") + _rounded_integer(
        second, "The second argument"
    )


def _string_split(value: Any, delimiters: Any) -> list[str]:
    text = _string(value, "The first argument")
    separators = _string(delimiters, "The delimiter (second argument)")
    if not separators:
        raise _BadArgument("The delimiter (second argument) must not be empty")
    parts: list[str] = []
    current: list[str] = []
    for char in text:
        if char in separators:
            if current:
                parts.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        parts.append("".join(current))
    return parts


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "States.StringToJson": _string_to_json,
    "States.JsonToString": _json_to_string,
    "States.Array": _array_of,
    "States.ArrayPartition": _array_partition,
    "States.ArrayContains": _array_contains,
    "States.ArrayRange": _array_range,
    "States.ArrayGetItem": _array_get_item,
    "States.ArrayLength": _array_length,
    "States.ArrayUnique": _array_unique,
    "States.Base64Encode": _base64_encode,
    "States.Base64Decode": _base64_decode,
    "States.Hash": _hash,
    "States.JsonMerge": _json_merge,
    "States.MathAdd": _math_add,
    "States.StringSplit": _string_split,
}
