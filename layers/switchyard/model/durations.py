"""Durations: an integer number of seconds, or `90s`, `10m`, `4h`, `2d`."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError

DURATION_PATTERN = r"^[0-9]+(s|m|h|d)$"
_DURATION = re.compile(DURATION_PATTERN)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

BAD_DURATION = "bad_duration"


def parse_duration(value: Any) -> int:
    """Seconds in `value`; raises a `bad_duration` validation error otherwise."""
    if isinstance(value, bool):
        raise _bad(value)
    if isinstance(value, int):
        if value < 0:
            raise _bad(value)
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        if _DURATION.match(text):
            return int(text[:-1]) * _UNIT_SECONDS[text[-1]]
    raise _bad(value)


def format_duration(seconds: int) -> str:
    """The shortest exact spelling of `seconds`: 7200 -> `2h`."""
    for unit in ("d", "h", "m"):
        size = _UNIT_SECONDS[unit]
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _bad(value: Any) -> PydanticCustomError:
    return PydanticCustomError(
        BAD_DURATION,
        "'{value}' is not a duration; write seconds as a number or a string such as "
        "90s, 10m, 4h or 2d",
        {"value": value},
    )


Duration = Annotated[
    int,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(
        {
            "description": "Seconds as an integer, or a string such as 90s, 10m, 4h, 2d.",
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": DURATION_PATTERN},
            ],
        }
    ),
]
"""Seconds; accepts `90`, `"90s"`, `"10m"`, `"4h"`, `"2d"`."""
