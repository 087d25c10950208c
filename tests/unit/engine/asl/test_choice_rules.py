"""Choice rules: every operator, matching, not matching, mismatched types and missing paths,
evaluated by our primitives and by moto's interpreter."""

from __future__ import annotations

from typing import Any

import pytest

from switchyard.engine.asl import AslFailure, ChoiceRuleError, StatesError, choose
from switchyard.engine.asl.choice_rules import parse_choice, parse_rule
from tests.unit.engine.asl.moto_sfn import (
    MotoStepFunctions,
    Outcome,
    choice_machine,
    evaluate_locally,
)

DATA: dict[str, Any] = {
    "s": "abc",
    "s_same": "abc",
    "s_low": "abb",
    "n": 5,
    "n_float": 5.0,
    "n_low": 2.5,
    "b": True,
    "b_false": False,
    "z": None,
    "t": "2026-01-01T00:00:00Z",
    "t_same": "2026-01-01T01:00:00+01:00",
    "t_later": "2026-01-01T00:00:00.5Z",
    "t_bad": "2026-01-01 00:00:00",
    "star": "a*b",
    "obj": {"k": 1},
    "arr": [1, 2],
    "empty": "",
}
CONTEXT = {"State": {"Name": "C"}}

MATCHED, DEFAULT = "matched", "default"


def rule(operator: str, value: Any, variable: str = "$.s") -> dict[str, Any]:
    return {"Variable": variable, operator: value}


ORDERINGS = ["Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"]


def _expected(order: str, comparison: int) -> str:
    holds = {
        "Equals": comparison == 0,
        "LessThan": comparison < 0,
        "GreaterThan": comparison > 0,
        "LessThanEquals": comparison <= 0,
        "GreaterThanEquals": comparison >= 0,
    }[order]
    return MATCHED if holds else DEFAULT


def _cases() -> list[tuple[str, dict[str, Any], str]]:
    """(id, rule, expected outcome) - the expected value is what AWS documents."""
    cases: list[tuple[str, dict[str, Any], str]] = []
    for order in ORDERINGS:
        for value, cmp in (("abc", 0), ("abd", -1), ("abb", 1), ("ab", 1), ("B", 1)):
            cases.append(
                (f"String{order}-{value}", rule(f"String{order}", value), _expected(order, cmp))
            )
        cases.append((f"String{order}-mismatch", rule(f"String{order}", "5", "$.n"), DEFAULT))
        for path, cmp in (("$.s_same", 0), ("$.s_low", 1)):
            cases.append(
                (
                    f"String{order}Path-{path}",
                    rule(f"String{order}Path", path),
                    _expected(order, cmp),
                )
            )
        cases.append((f"String{order}Path-mismatch", rule(f"String{order}Path", "$.n"), DEFAULT))
        for value, cmp in ((5, 0), (4, 1), (6.5, -1), (5.0, 0)):
            cases.append(
                (
                    f"Numeric{order}-{value}",
                    rule(f"Numeric{order}", value, "$.n"),
                    _expected(order, cmp),
                )
            )
        cases.append((f"Numeric{order}-mismatch", rule(f"Numeric{order}", 5, "$.s"), DEFAULT))
        cases.append((f"Numeric{order}-bool", rule(f"Numeric{order}", 1, "$.b"), DEFAULT))
        for path, cmp in (("$.n_float", 0), ("$.n_low", 1)):
            cases.append(
                (
                    f"Numeric{order}Path-{path}",
                    rule(f"Numeric{order}Path", path, "$.n"),
                    _expected(order, cmp),
                )
            )
        cases.append(
            (f"Numeric{order}Path-mismatch", rule(f"Numeric{order}Path", "$.s", "$.n"), DEFAULT)
        )
        for value, cmp in (
            ("2026-01-01T00:00:00Z", 0),
            ("2025-12-31T23:59:59Z", 1),
            ("2026-01-01T00:00:00.001Z", -1),
            ("2026-01-01T02:00:00+02:00", 0),
        ):
            cases.append(
                (
                    f"Timestamp{order}-{value}",
                    rule(f"Timestamp{order}", value, "$.t"),
                    _expected(order, cmp),
                )
            )
        cases.append(
            (
                f"Timestamp{order}-mismatch",
                rule(f"Timestamp{order}", "2026-01-01T00:00:00Z", "$.n"),
                DEFAULT,
            )
        )
        cases.append(
            (
                f"Timestamp{order}-not-a-timestamp",
                rule(f"Timestamp{order}", "2026-01-01T00:00:00Z", "$.t_bad"),
                DEFAULT,
            )
        )
        for path, cmp in (("$.t_same", 0), ("$.t_later", -1)):
            cases.append(
                (
                    f"Timestamp{order}Path-{path}",
                    rule(f"Timestamp{order}Path", path, "$.t"),
                    _expected(order, cmp),
                )
            )
    for value, expected in ((True, MATCHED), (False, DEFAULT)):
        cases.append((f"BooleanEquals-{value}", rule("BooleanEquals", value, "$.b"), expected))
    cases.append(("BooleanEquals-mismatch", rule("BooleanEquals", True, "$.n"), DEFAULT))
    cases.append(("BooleanEqualsPath-true", rule("BooleanEqualsPath", "$.b", "$.b"), MATCHED))
    cases.append(
        ("BooleanEqualsPath-false", rule("BooleanEqualsPath", "$.b_false", "$.b"), DEFAULT)
    )
    for pattern, expected in (
        ("a*", MATCHED),
        ("*b", MATCHED),
        ("a\\*b", MATCHED),
        ("a\\*c", DEFAULT),
        ("*", MATCHED),
        ("a?b", DEFAULT),
        ("A*", DEFAULT),
    ):
        cases.append(
            (f"StringMatches-{pattern}", rule("StringMatches", pattern, "$.star"), expected)
        )
    cases.append(("StringMatches-mismatch", rule("StringMatches", "*", "$.n"), DEFAULT))
    for test, truthy, falsy in (
        ("IsNull", "$.z", "$.s"),
        ("IsString", "$.s", "$.n"),
        ("IsNumeric", "$.n_low", "$.b"),
        ("IsBoolean", "$.b_false", "$.z"),
        ("IsTimestamp", "$.t", "$.t_bad"),
        ("IsPresent", "$.z", "$.nope"),
    ):
        cases.append((f"{test}-true-on-{truthy}", rule(test, True, truthy), MATCHED))
        cases.append((f"{test}-true-on-{falsy}", rule(test, True, falsy), DEFAULT))
        cases.append((f"{test}-false-on-{falsy}", rule(test, False, falsy), MATCHED))
    cases += [
        (
            "And-both",
            {"And": [rule("StringEquals", "abc"), rule("NumericEquals", 5, "$.n")]},
            MATCHED,
        ),
        (
            "And-one",
            {"And": [rule("StringEquals", "abc"), rule("NumericEquals", 4, "$.n")]},
            DEFAULT,
        ),
        ("Or-one", {"Or": [rule("StringEquals", "x"), rule("NumericEquals", 5, "$.n")]}, MATCHED),
        ("Or-none", {"Or": [rule("StringEquals", "x"), rule("NumericEquals", 4, "$.n")]}, DEFAULT),
        ("Not", {"Not": rule("StringEquals", "x")}, MATCHED),
        (
            "Nested",
            {
                "Not": {
                    "And": [{"Or": [rule("IsNull", True, "$.z")]}, rule("IsPresent", False, "$.q")]
                }
            },
            DEFAULT,
        ),
        (
            "Or-short-circuits-a-missing-path",
            {"Or": [rule("IsString", True), rule("StringEquals", "x", "$.nope")]},
            MATCHED,
        ),
        (
            "And-short-circuits-a-missing-path",
            {"And": [rule("IsString", False), rule("StringEquals", "x", "$.nope")]},
            DEFAULT,
        ),
        ("context-variable", rule("StringEquals", "C", "$$.State.Name"), MATCHED),
        ("object-variable", rule("IsPresent", True, "$.obj.k"), MATCHED),
        ("array-index-variable", rule("NumericEquals", 2, "$.arr[1]"), MATCHED),
        ("empty-string", rule("StringEquals", "", "$.empty"), MATCHED),
    ]
    return cases


CASES = _cases()
RUNTIME_ERROR_CASES: list[tuple[str, dict[str, Any]]] = [
    ("missing-variable", rule("StringEquals", "x", "$.nope")),
    ("missing-variable-IsNull", rule("IsNull", True, "$.nope")),
    ("missing-variable-IsString", rule("IsString", False, "$.nope")),
    ("missing-comparison-path", rule("StringEqualsPath", "$.nope")),
    (
        "And-evaluates-the-missing-path",
        {"And": [rule("IsString", True), rule("StringEquals", "x", "$.nope")]},
    ),
    ("Not-missing", {"Not": rule("NumericEquals", 1, "$.nope.deeper")}),
]


def moto_deviation(case_id: str) -> str | None:
    """What moto answers where it departs from AWS's documented behaviour (None: it agrees).

    - moto parses only `YYYY-MM-DDTHH:MM:SSZ` timestamps: with fractional seconds or an offset
      (valid RFC 3339, which AWS accepts) it gets None, then `Equals` is false and the ordering
      operators crash into `States.Runtime`;
    - moto compares mismatched `...Path` operands with Python's `<` and crashes; AWS: false;
    - moto's StringMatches is fnmatch: `?` is a wildcard and `\\*` is not an escape; AWS only
      treats `*` specially.
    """
    timestamp_needs_rfc3339 = case_id.startswith("Timestamp") and any(
        marker in case_id for marker in (".001Z", "+02:00", "$.t_same", "$.t_later")
    )
    if timestamp_needs_rfc3339:
        return "default" if case_id.startswith("TimestampEquals") else StatesError.RUNTIME
    if case_id.endswith("Path-mismatch") and "Than" in case_id:
        return StatesError.RUNTIME
    return {"StringMatches-a\\*b": "default", "StringMatches-a?b": "matched"}.get(case_id)


MOTO_MISSING_PATH_ANSWERS = {
    "missing-variable": "default",
    "missing-variable-IsNull": "default",
    "missing-variable-IsString": "matched",
    "missing-comparison-path": StatesError.RUNTIME,
    "And-evaluates-the-missing-path": "default",
    "Not-missing": "matched",
}
"""Known moto deviation: moto reads a missing `Variable` as "no value" and goes on; AWS fails the
execution with `States.Runtime` (only IsPresent tests for absence). A missing `...Path` operand
fails in both."""


def _answer(outcome: Outcome) -> str | None:
    return outcome.output["branch"] if outcome.status == "SUCCEEDED" else outcome.error


@pytest.fixture(scope="module")
def moto_outcomes(moto_sfn: MotoStepFunctions) -> dict[str, Outcome]:
    machines = [(choice_machine(r), DATA) for _, r, _ in CASES]
    machines += [(choice_machine(r), DATA) for _, r in RUNTIME_ERROR_CASES]
    machines.append((choice_machine(rule("StringEquals", "x"), default=False), DATA))
    ids = [c[0] for c in CASES] + [c[0] for c in RUNTIME_ERROR_CASES] + ["no-default"]
    return dict(zip(ids, moto_sfn.run_all(machines), strict=True))


@pytest.mark.parametrize(("case_id", "rule_source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_choice_parity_with_moto(
    case_id: str, rule_source: dict[str, Any], expected: str, moto_outcomes: dict[str, Outcome]
) -> None:
    ours = evaluate_locally(choice_machine(rule_source), DATA, CONTEXT)
    assert ours == Outcome.succeeded({"branch": expected})
    theirs = moto_outcomes[case_id]
    deviation = moto_deviation(case_id)
    if deviation is None:
        assert theirs == ours
    else:
        assert _answer(theirs) == deviation, theirs


@pytest.mark.parametrize(
    ("case_id", "rule_source"), RUNTIME_ERROR_CASES, ids=[c[0] for c in RUNTIME_ERROR_CASES]
)
def test_missing_paths_are_runtime_errors_in_both(
    case_id: str, rule_source: dict[str, Any], moto_outcomes: dict[str, Outcome]
) -> None:
    ours = evaluate_locally(choice_machine(rule_source), DATA, CONTEXT)
    assert ours.error == StatesError.RUNTIME
    assert ours.cause is not None and "references an invalid value" in ours.cause
    assert _answer(moto_outcomes[case_id]) == MOTO_MISSING_PATH_ANSWERS[case_id]


def test_no_choice_matched(moto_outcomes: dict[str, Outcome]) -> None:
    ours = evaluate_locally(choice_machine(rule("StringEquals", "x"), default=False), DATA)
    assert ours.error == StatesError.NO_CHOICE_MATCHED
    # Known moto deviation: moto raises a Python RuntimeError, reported as States.Runtime.
    assert moto_outcomes["no-default"].error == StatesError.RUNTIME


# -- unit tests ----------------------------------------------------------------------------------


def test_choose_returns_the_first_matching_choice() -> None:
    choices = [
        parse_choice({**rule("IsString", True), "Next": "First"}, "/c/0"),
        parse_choice({**rule("StringEquals", "abc"), "Next": "Second"}, "/c/1"),
    ]
    assert choose(choices, "D", DATA, {}) == "First"
    with pytest.raises(AslFailure) as caught:
        choose(choices[1:], None, {"s": "x"}, {})
    assert caught.value.error == StatesError.NO_CHOICE_MATCHED


def test_string_ordering_follows_utf16_code_units_like_java() -> None:
    # U+FF21 (fullwidth A) sorts after U+1F600 in code points but before it in UTF-16 units.
    matcher = parse_rule(rule("StringLessThan", "\U0001f600", "$.v"), "/r")
    assert matcher.matches({"v": "\uff21"}, {}) is False
    assert parse_rule(rule("StringGreaterThan", "\U0001f600", "$.v"), "/r").matches(
        {"v": "\uff21"}, {}
    )


def test_timestamps_with_nanoseconds_compare_exactly() -> None:
    later = parse_rule(rule("TimestampGreaterThan", "2026-01-01T00:00:00.000000001Z", "$.v"), "/r")
    assert later.matches({"v": "2026-01-01T00:00:00.000000002Z"}, {})
    assert not later.matches({"v": "2026-01-01T00:00:00.000000001Z"}, {})


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"Variable": "$.a"}, "exactly one comparison operator"),
        ({"Variable": "$.a", "StringEquals": 1}, "wrong type"),
        ({"Variable": "$.a", "NumericEquals": "1"}, "wrong type"),
        ({"Variable": "$.a", "TimestampEquals": "yesterday"}, "wrong type"),
        ({"Variable": "$.a", "IsNull": "yes"}, "wrong type"),
        ({"Variable": "$.a", "StringEquals": "x", "NumericEquals": 1}, "exactly one"),
        ({"Variable": "a", "IsNull": True}, "starting with"),
        ({"Variable": "$.a", "StringEqualsPath": "nope"}, "starting with"),
        ({"StringEquals": "x"}, "must have a 'Variable'"),
        ({"And": []}, "non-empty array"),
        ({"Not": {"Variable": "$.a", "IsNull": True, "Next": "X"}}, "must not have 'Next'"),
        ({"Variable": "$.a", "Foo": 1}, "Field 'Foo' is not supported"),
    ],
)
def test_invalid_rules(source: dict[str, Any], message: str) -> None:
    with pytest.raises(ChoiceRuleError, match=message):
        parse_rule(source, "/States/C/Choices/0")


def test_top_level_rules_need_next() -> None:
    with pytest.raises(ChoiceRuleError, match="Next"):
        parse_choice(rule("IsNull", True), "/States/C/Choices/0")
