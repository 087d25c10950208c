"""Timing values that states read from their definition or their input.

- `wait_until`: when a Wait state ends (`Seconds`, `SecondsPath`, `Timestamp`, `TimestampPath`);
- `resolve_seconds`: `TimeoutSeconds(Path)`, `HeartbeatSeconds(Path)`, `MaxConcurrencyPath`,
  `ToleratedFailureCountPath` - a positive (or non-negative) integer, read from the input when it
  is a path. A bad value fails the state with `States.Runtime`, as on AWS.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from switchyard.engine.asl.errors import AslFailure, StatesError, to_json_text
from switchyard.engine.asl.json_values import is_integral, is_number
from switchyard.engine.asl.jsonpath import JsonPath, PathNotFoundError
from switchyard.engine.asl.timestamps import parse_timestamp

MAX_WAIT_SECONDS = 99_999_999


@dataclass(frozen=True, slots=True)
class WaitSpec:
    """Exactly one of the four fields is set (the definition parser checks it)."""

    seconds: int | None = None
    seconds_path: JsonPath | None = None
    timestamp: str | None = None
    timestamp_path: JsonPath | None = None


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else to_json_text(value)


def wait_until(spec: WaitSpec, data: Any, now: datetime) -> datetime:
    """The moment a Wait state entered at `now` (timezone-aware) with input `data` ends.

    Failures carry the causes Step Functions writes for them.
    """
    if spec.seconds is not None:
        return now + timedelta(seconds=spec.seconds)
    if spec.seconds_path is not None:
        path = spec.seconds_path
        try:
            value: Any = path.evaluate(data)
        except PathNotFoundError:
            raise AslFailure(
                StatesError.RUNTIME,
                f"The SecondsPath parameter does not reference an input value: {path.text}",
            ) from None
        if not is_number(value) or not is_integral(value):
            raise AslFailure(
                StatesError.RUNTIME,
                "The SecondsPath parameter cannot be parsed as a long value: "
                f"{path.text} == {_shown(value)}",
            )
        if value < 0:
            raise AslFailure(
                StatesError.RUNTIME,
                f"The SecondsPath parameter references a negative value: {path.text} == {value}",
            )
        return now + timedelta(seconds=int(value))
    if spec.timestamp is not None:
        text: Any = spec.timestamp
        shown_path = spec.timestamp
    elif spec.timestamp_path is not None:
        path = spec.timestamp_path
        shown_path = path.text
        try:
            text = path.evaluate(data)
        except PathNotFoundError:
            raise AslFailure(
                StatesError.RUNTIME,
                f"The JSONPath '{path.text}' specified for the field 'TimestampPath' could not "
                f"be found in the input '{to_json_text(data)}'",
            ) from None
    else:
        raise ValueError("a Wait state needs one of Seconds, SecondsPath, Timestamp, TimestampPath")
    parsed = parse_timestamp(text)
    if parsed is None:
        raise AslFailure(
            StatesError.RUNTIME,
            "The TimestampPath parameter does not reference a valid ISO-8601 extended offset "
            f"date-time format string: {shown_path} == {_shown(text)}",
        )
    return parsed.moment


def resolve_seconds(
    value: int | None,
    path: JsonPath | None,
    data: Any,
    field: str,
    *,
    minimum: int = 1,
    maximum: int = MAX_WAIT_SECONDS,
) -> int | None:
    """An integer setting given inline (`value`) or read from the input (`path`); None if unset.

    `field` names the definition field in the failure message (e.g. `TimeoutSecondsPath`).
    """
    if value is not None:
        return value
    if path is None:
        return None
    try:
        found: Any = path.evaluate(data)
    except PathNotFoundError:
        raise AslFailure(
            StatesError.RUNTIME,
            f"The {field} parameter does not reference an input value: {path.text}",
        ) from None
    if not is_number(found) or not is_integral(found) or not minimum <= found <= maximum:
        raise AslFailure(
            StatesError.RUNTIME,
            f"The {field} parameter does not reference a valid integer between {minimum} and "
            f"{maximum}: {to_json_text(found)}",
        )
    return int(found)
