"""RFC 3339 timestamps as Step Functions accepts them (Choice `Timestamp*`, Wait `Timestamp`).

Step Functions takes the RFC 3339 profile of ISO 8601 with an uppercase `T` between date and time
and an uppercase `Z` where there is no numeric offset; fractional seconds are optional (up to
nanoseconds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


@dataclass(frozen=True, slots=True, order=True)
class Timestamp:
    """An instant: a UTC datetime (microseconds) plus the nanoseconds below a microsecond."""

    moment: datetime
    nanos: int = 0


def parse_timestamp(text: object) -> Timestamp | None:
    """The instant `text` denotes, or None when it is not a timestamp Step Functions accepts."""
    if not isinstance(text, str):
        return None
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    digits = (fraction or "").ljust(9, "0")
    if zone == "Z":
        tz = UTC
    else:
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return None
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        moment = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second),
            int(digits[:6]), tzinfo=tz,
        )  # fmt: skip
    except ValueError:
        return None
    return Timestamp(moment.astimezone(UTC), int(digits[6:]))
