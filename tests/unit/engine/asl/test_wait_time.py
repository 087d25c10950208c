"""Wait timing, TimeoutSecondsPath-style settings, RFC 3339 timestamps; parity with moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from switchyard.engine.asl import (
    AslFailure,
    StatesError,
    WaitSpec,
    compile_path,
    parse_timestamp,
    resolve_seconds,
    wait_until,
)
from tests.unit.engine.asl.moto_sfn import MotoStepFunctions, Outcome

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DATA: dict[str, Any] = {
    "secs": 30,
    "secs_float": 30.0,
    "zero": 0,
    "neg": -1,
    "str": "1",
    "half": 0.5,
    "past": "2020-01-01T00:00:00Z",
    "past_frac": "2020-01-01T00:00:00.5Z",
    "past_offset": "2020-01-01T00:00:00+01:00",
    "bad": "yesterday",
    "lower": "2020-01-01t00:00:00z",
    "no_zone": "2020-01-01T00:00:00",
}


class TestTimestamps:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-01-31T12:00:00Z", datetime(2026, 1, 31, 12, tzinfo=UTC)),
            ("2026-01-31T12:00:00.25Z", datetime(2026, 1, 31, 12, 0, 0, 250_000, tzinfo=UTC)),
            ("2026-01-31T14:00:00+02:00", datetime(2026, 1, 31, 12, tzinfo=UTC)),
            ("2026-01-31T10:30:00-01:30", datetime(2026, 1, 31, 12, tzinfo=UTC)),
        ],
    )
    def test_valid(self, text: str, expected: datetime) -> None:
        parsed = parse_timestamp(text)
        assert parsed is not None and parsed.moment == expected

    @pytest.mark.parametrize(
        "text",
        ["yesterday", "2026-01-31", "2026-01-31T12:00:00", "2026-01-31t12:00:00z",
         "2026-01-31 12:00:00Z", "2026-02-30T00:00:00Z", "2026-01-31T12:00:00+24:00", 5, None],
    )  # fmt: skip
    def test_invalid(self, text: Any) -> None:
        assert parse_timestamp(text) is None

    def test_nanoseconds_are_kept_for_ordering(self) -> None:
        first = parse_timestamp("2026-01-01T00:00:00.000000001Z")
        second = parse_timestamp("2026-01-01T00:00:00.000000002Z")
        assert first is not None and second is not None and first < second


class TestWaitUntil:
    def test_seconds_and_seconds_path(self) -> None:
        assert wait_until(WaitSpec(seconds=5), DATA, NOW) == NOW + timedelta(seconds=5)
        for field in ("$.secs", "$.secs_float"):
            spec = WaitSpec(seconds_path=compile_path(field))
            assert wait_until(spec, DATA, NOW) == NOW + timedelta(seconds=30)

    def test_timestamp_and_timestamp_path(self) -> None:
        at = datetime(2020, 1, 1, tzinfo=UTC)
        assert wait_until(WaitSpec(timestamp="2020-01-01T00:00:00Z"), DATA, NOW) == at
        spec = WaitSpec(timestamp_path=compile_path("$.past_offset"))
        assert wait_until(spec, DATA, NOW) == at - timedelta(hours=1)

    @pytest.mark.parametrize(
        ("spec", "cause"),
        [
            (WaitSpec(seconds_path=compile_path("$.neg")),
             "The SecondsPath parameter references a negative value: $.neg == -1"),
            (WaitSpec(seconds_path=compile_path("$.str")),
             "The SecondsPath parameter cannot be parsed as a long value: $.str == 1"),
            (WaitSpec(seconds_path=compile_path("$.half")),
             "The SecondsPath parameter cannot be parsed as a long value: $.half == 0.5"),
            (WaitSpec(seconds_path=compile_path("$.nope")),
             "The SecondsPath parameter does not reference an input value: $.nope"),
            (WaitSpec(timestamp_path=compile_path("$.bad")),
             "The TimestampPath parameter does not reference a valid ISO-8601 extended offset "
             "date-time format string: $.bad == yesterday"),
        ],
    )  # fmt: skip
    def test_bad_values_fail_with_the_causes_aws_writes(self, spec: WaitSpec, cause: str) -> None:
        with pytest.raises(AslFailure) as caught:
            wait_until(spec, DATA, NOW)
        assert (caught.value.error, caught.value.cause) == (StatesError.RUNTIME, cause)


class TestResolveSeconds:
    def test_inline_value_wins_and_unset_is_none(self) -> None:
        assert resolve_seconds(60, None, DATA, "TimeoutSecondsPath") == 60
        assert resolve_seconds(None, None, DATA, "TimeoutSecondsPath") is None

    def test_path_values_must_be_integers_in_range(self) -> None:
        path = compile_path("$.secs")
        assert resolve_seconds(None, path, DATA, "TimeoutSecondsPath") == 30
        for bad in ("$.zero", "$.neg", "$.str", "$.half", "$.nope"):
            with pytest.raises(AslFailure) as caught:
                resolve_seconds(None, compile_path(bad), DATA, "HeartbeatSecondsPath")
            assert caught.value.error == StatesError.RUNTIME
            assert "HeartbeatSecondsPath" in caught.value.cause
        assert (
            resolve_seconds(None, compile_path("$.zero"), DATA, "MaxConcurrencyPath", minimum=0)
            == 0
        )


# -- parity with moto: Wait states (all of them end at once: zero seconds or a past time) -------

WAITS: list[tuple[str, Any]] = [
    ("Seconds", 0),
    ("SecondsPath", "$.zero"),
    ("SecondsPath", "$.neg"),
    ("SecondsPath", "$.str"),
    ("SecondsPath", "$.half"),
    ("SecondsPath", "$.nope"),
    ("Timestamp", "2020-01-01T00:00:00Z"),
    ("TimestampPath", "$.past"),
    ("TimestampPath", "$.past_frac"),
    ("TimestampPath", "$.bad"),
    ("TimestampPath", "$.lower"),
    ("TimestampPath", "$.no_zone"),
    ("TimestampPath", "$.nope"),
]


def wait_machine(field: str, value: Any) -> dict[str, Any]:
    return {"StartAt": "W", "States": {"W": {"Type": "Wait", field: value, "End": True}}}


def ours(field: str, value: Any) -> Outcome:
    if field == "Seconds":
        spec = WaitSpec(seconds=value)
    elif field == "Timestamp":
        spec = WaitSpec(timestamp=value)
    elif field == "SecondsPath":
        spec = WaitSpec(seconds_path=compile_path(value))
    else:
        spec = WaitSpec(timestamp_path=compile_path(value))
    try:
        wait_until(spec, DATA, NOW)
    except AslFailure as failure:
        return Outcome.failed(failure.error, failure.cause)
    return Outcome.succeeded(DATA)


@pytest.fixture(scope="module")
def moto_outcomes(moto_sfn: MotoStepFunctions) -> list[Outcome]:
    return moto_sfn.run_all([(wait_machine(f, v), DATA) for f, v in WAITS])


@pytest.mark.parametrize("index", range(len(WAITS)))
def test_wait_parity_with_moto(index: int, moto_outcomes: list[Outcome]) -> None:
    mine, theirs = ours(*WAITS[index]), moto_outcomes[index]
    assert mine.same_result(theirs), (mine, theirs)
    if mine.status == "FAILED":
        assert theirs.cause is not None and mine.cause is not None
        # moto writes JSON with spaces where AWS (and we) write it compactly.
        assert (
            theirs.cause.replace(", ", ",")
            .replace(": ", ":")
            .endswith(mine.cause.replace(", ", ",").replace(": ", ":"))
        )


def test_known_moto_deviation_timestamps_with_an_offset(moto_sfn: MotoStepFunctions) -> None:
    # "ISO-8601 extended offset date-time" takes a numeric offset; moto only parses `Z`.
    theirs = moto_sfn.run(wait_machine("TimestampPath", "$.past_offset"), DATA)
    assert theirs.error == StatesError.RUNTIME
    assert ours("TimestampPath", "$.past_offset").status == "SUCCEEDED"
