from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from switchyard.model import Duration, format_duration, parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(90, 90), ("90", 90), ("90s", 90), ("10m", 600), ("4h", 14400), ("2d", 172800), (0, 0)],
)
def test_durations_parse(value: object, seconds: int) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["10 minutes", "-2s", "1.5h", -1, True, None, "h", ""])
def test_bad_durations_are_bad_duration_errors(value: object) -> None:
    class Holder(BaseModel):
        timeout: Duration

    with pytest.raises(ValidationError) as caught:
        Holder(timeout=value)
    assert caught.value.errors()[0]["type"] == "bad_duration"


def test_durations_format_back_to_the_shortest_spelling() -> None:
    assert [format_duration(s) for s in (7200, 90, 600, 86400, 0)] == [
        "2h",
        "90s",
        "10m",
        "1d",
        "0s",
    ]
