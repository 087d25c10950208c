"""Intrinsic functions: unit tests, parity with moto's interpreter, and properties."""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from switchyard.engine.asl import AslFailure, Entropy, StatesError, parse_intrinsic
from switchyard.engine.asl.intrinsic_parser import IntrinsicSyntaxError
from switchyard.engine.asl.intrinsics import evaluate_intrinsic, format_value
from tests.unit.engine.asl.moto_sfn import (
    MotoStepFunctions,
    Outcome,
    evaluate_locally,
    parameters_machine,
)

DATA: dict[str, Any] = {
    "s": "hello",
    "n": 3,
    "f": 2.5,
    "neg": -2.5,
    "b": True,
    "z": None,
    "arr": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    "dup": [1, 2, 2, "a", "a", True, True, None, None, 1.5],
    "objs": {"a": {"a1": 1}, "b": 2},
    "objs2": {"a": {"a3": 1}, "c": 3},
    "csv": "1,2,,3",
    "text": "This.is+a,test=string",
    "json": '{"k": [1, 2, {"x": null}]}',
    "tpl": "Hi {} and {}",
    "nested": {"list": [{"id": "x"}, {"id": "y"}]},
    "b64": "RGF0YSB0byBlbmNvZGU=",
    "unicode": "héllo wörld",
}


def run(
    expression: str, data: Any = None, context: Any = None, entropy: Entropy | None = None
) -> Any:
    call = parse_intrinsic(expression)
    return evaluate_intrinsic(
        call, DATA if data is None else data, context or {}, entropy or Entropy()
    )


def failure(expression: str, data: Any = None) -> AslFailure:
    with pytest.raises(AslFailure) as caught:
        run(expression, data)
    return caught.value


# -- parsing -----------------------------------------------------------------------------------


class TestParser:
    def test_nested_calls_literals_and_paths(self) -> None:
        call = parse_intrinsic(
            "States.Format('{} {} {} {}', States.ArrayLength($.arr), -1.5e2, true, null)"
        )
        assert call.name == "States.Format"
        assert len(call.arguments) == 5

    def test_string_literal_escapes_reserved_characters(self) -> None:
        assert run(r"States.Array('it\'s', 'a\\b', '\{x\}')") == ["it's", "a\\b", "{x}"]

    def test_path_arguments_may_contain_brackets_commas_and_quotes(self) -> None:
        data = {"a b": {"c,d": [10, 20]}}
        assert run("States.Array($['a b']['c,d'][1], 'x')", data) == [20, "x"]

    def test_context_path_argument_reads_the_context_object(self) -> None:
        assert run("States.Array($$.State.Name)", {}, {"State": {"Name": "S"}}) == ["S"]

    @pytest.mark.parametrize(
        "text",
        [
            "States.Nope(1)",
            "States.ArrayLength()",
            "States.ArrayLength($.a, $.b)",
            "States.UUID(1)",
            "States.MathRandom(1)",
            "States.Format('x'",
            "States.Format('x') trailing",
            "States.Array(foo)",
            "Format('x')",
        ],
    )
    def test_rejects_invalid_calls(self, text: str) -> None:
        with pytest.raises(IntrinsicSyntaxError):
            parse_intrinsic(text)


# -- each function -------------------------------------------------------------------------------


class TestFunctions:
    def test_format_renders_values_like_step_functions(self) -> None:
        assert (
            run("States.Format('{}|{}|{}|{}|{}', $.n, $.f, $.b, $.z, $.s)")
            == "3|2.5|true|null|hello"
        )
        assert run("States.Format('{}', $.objs)") == "{a={a1=1}, b=2}"
        assert run("States.Format('{}', $.dup)") == "[1, 2, 2, a, a, true, true, null, null, 1.5]"

    def test_format_with_template_from_a_path(self) -> None:
        assert run("States.Format($.tpl, $.s, $.n)") == "Hi hello and 3"

    def test_format_escaped_braces_are_literal(self) -> None:
        assert run(r"States.Format('\{\} {} \\ \'q\'', $.n)") == "{} 3 \\ 'q'"

    def test_format_placeholder_count_must_match(self) -> None:
        assert failure("States.Format('{} {}', $.n)").error == StatesError.INTRINSIC_FAILURE
        assert failure("States.Format('{}', $.n, $.n)").error == StatesError.INTRINSIC_FAILURE

    def test_format_template_must_be_a_string(self) -> None:
        assert failure("States.Format($.n)").error == StatesError.INTRINSIC_FAILURE

    def test_string_to_json_and_back(self) -> None:
        assert run("States.StringToJson($.json)") == {"k": [1, 2, {"x": None}]}
        assert run("States.JsonToString($.objs)") == '{"a":{"a1":1},"b":2}'
        assert run("States.JsonToString($.unicode)") == '"héllo wörld"'
        assert run("States.StringToJson('  ')") is None
        assert failure("States.StringToJson('{')").error == StatesError.INTRINSIC_FAILURE
        assert failure("States.StringToJson($.n)").error == StatesError.INTRINSIC_FAILURE

    def test_array_functions(self) -> None:
        assert run("States.Array()") == []
        assert run("States.ArrayPartition($.arr, 4)") == [[1, 2, 3, 4], [5, 6, 7, 8], [9]]
        assert run("States.ArrayContains($.arr, 5)") is True
        assert run("States.ArrayContains($.dup, 1.5)") is True
        assert run("States.ArrayContains($.arr, true)") is False  # true is not the number 1
        assert run("States.ArrayRange(1, 9, 2)") == [1, 3, 5, 7, 9]
        assert run("States.ArrayRange(9, 1, -4)") == [9, 5, 1]
        assert run("States.ArrayRange(1, 0, 1)") == []
        assert run("States.ArrayGetItem($.arr, 5)") == 6
        assert run("States.ArrayLength($.arr)") == 9
        assert run("States.ArrayUnique($.dup)") == [1, 2, "a", True, None, 1.5]
        assert run("States.ArrayUnique(States.Array($.objs, $.objs, $.objs2))") == [
            DATA["objs"],
            DATA["objs2"],
        ]

    @pytest.mark.parametrize(
        "expression",
        [
            "States.ArrayPartition($.arr, 0)",
            "States.ArrayPartition($.arr, 1.5)",
            "States.ArrayPartition($.s, 2)",
            "States.ArrayRange(1, 2, 0)",
            "States.ArrayRange(1, 2000, 1)",
            "States.ArrayRange(1, 'a', 1)",
            "States.ArrayGetItem($.arr, 9)",
            "States.ArrayGetItem($.arr, -1)",
            "States.ArrayGetItem($.arr, 1.5)",
            "States.ArrayLength($.s)",
            "States.ArrayUnique($.n)",
            "States.ArrayContains($.s, 1)",
        ],
    )
    def test_array_functions_reject_bad_arguments(self, expression: str) -> None:
        assert failure(expression).error == StatesError.INTRINSIC_FAILURE

    def test_base64(self) -> None:
        assert run("States.Base64Encode('Data to encode')") == DATA["b64"]
        assert run("States.Base64Decode($.b64)") == "Data to encode"
        assert run("States.Base64Decode(States.Base64Encode($.unicode))") == DATA["unicode"]
        assert failure("States.Base64Decode('not base64!!')").error == StatesError.INTRINSIC_FAILURE
        assert failure("States.Base64Encode($.n)").error == StatesError.INTRINSIC_FAILURE
        too_long = {"s": "a" * 10_001}
        assert failure("States.Base64Encode($.s)", too_long).error == StatesError.INTRINSIC_FAILURE
        assert len(run("States.Base64Encode($.s)", {"s": "a" * 10_000})) == 13_336

    @pytest.mark.parametrize("algorithm", ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"])
    def test_hash(self, algorithm: str) -> None:
        expected = hashlib.new(algorithm.replace("-", "").lower(), b"input data").hexdigest()
        assert run(f"States.Hash('input data', '{algorithm}')") == expected

    def test_hash_rejects_unknown_algorithms_and_non_strings(self) -> None:
        assert failure("States.Hash('x', 'sha-256')").error == StatesError.INTRINSIC_FAILURE
        assert failure("States.Hash($.n, 'MD5')").error == StatesError.INTRINSIC_FAILURE

    def test_json_merge_is_shallow(self) -> None:
        assert run("States.JsonMerge($.objs, $.objs2, false)") == {"a": {"a3": 1}, "b": 2, "c": 3}
        assert failure("States.JsonMerge($.objs, $.objs2, true)").error == (
            StatesError.INTRINSIC_FAILURE
        )
        assert failure("States.JsonMerge($.objs, $.arr, false)").error == (
            StatesError.INTRINSIC_FAILURE
        )

    def test_math_add_rounds_half_up_like_java(self) -> None:
        assert run("States.MathAdd($.n, -1)") == 2
        assert run("States.MathAdd($.f, 0)") == 3
        assert run("States.MathAdd($.neg, 0)") == -2
        assert failure("States.MathAdd('1', 2)").error == StatesError.INTRINSIC_FAILURE
        assert failure("States.MathAdd(2147483648, 0)").error == StatesError.INTRINSIC_FAILURE

    def test_math_random_uses_the_injected_source_and_excludes_the_end(self) -> None:
        entropy = Entropy(rng=random.Random(7))
        values = {run("States.MathRandom(1, 4)", entropy=entropy) for _ in range(200)}
        assert values == {1, 2, 3}
        assert run("States.MathRandom(1, 1000, 42)") == run("States.MathRandom(1, 1000, 42)")
        assert failure("States.MathRandom(5, 5)").error == StatesError.INTRINSIC_FAILURE

    def test_string_split_uses_every_delimiter_character_and_drops_empty_parts(self) -> None:
        assert run("States.StringSplit($.text, '.+,=')") == ["This", "is", "a", "test", "string"]
        assert run("States.StringSplit($.csv, ',')") == ["1", "2", "3"]
        assert failure("States.StringSplit($.csv, '')").error == StatesError.INTRINSIC_FAILURE

    def test_uuid_is_injectable(self) -> None:
        entropy = Entropy(new_uuid=lambda: "fixed")
        assert run("States.UUID()", entropy=entropy) == "fixed"
        assert re.fullmatch(r"[0-9a-f-]{36}", run("States.UUID()"))

    def test_deep_nesting(self) -> None:
        data = {"arn": "arn:aws:imagebuilder:us-east-1:1:image/my-recipe/1.0.2/3"}
        expression = (
            "States.Format('{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem("
            "States.StringSplit($.arn, '/'), 2), '.'), 0), States.ArrayGetItem(States.StringSplit("
            "States.ArrayGetItem(States.StringSplit($.arn, '/'), 2), '.'), 1))"
        )
        assert run(expression, data) == "1.0"


class TestMissingArguments:
    def test_a_missing_path_argument_is_a_runtime_error_naming_the_whole_call(self) -> None:
        error = failure("States.Format('{}', States.Format('{}', $.nope))", {"other": 1})
        assert error.error == StatesError.RUNTIME
        assert error.cause == (
            "The function 'States.Format('{}', States.Format('{}', $.nope))' had the following "
            "error: The JsonPath argument for the field '$.nope' could not be found in the input "
            "'{\"other\":1}'"
        )

    def test_an_index_past_the_end_is_missing_for_an_argument(self) -> None:
        assert failure("States.Array($.items[5])", {"items": [1]}).error == StatesError.RUNTIME

    def test_an_explicit_null_argument_is_present(self) -> None:
        assert run("States.Format('{}', $.z)") == "null"

    def test_a_wildcard_matching_nothing_is_an_empty_array(self) -> None:
        assert run("States.ArrayLength($.items[*].nope)", {"items": [1, 2]}) == 0


# -- properties ----------------------------------------------------------------------------------

json_scalars = hs.none() | hs.booleans() | hs.integers(-(10**6), 10**6) | hs.text(max_size=8)
json_values = hs.recursive(
    json_scalars,
    lambda inner: (
        hs.lists(inner, max_size=4) | hs.dictionaries(hs.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)
json_objects = hs.dictionaries(hs.text(max_size=6), json_values, max_size=6)


@given(json_objects, json_objects)
def test_json_merge_is_a_shallow_update(left: dict[str, Any], right: dict[str, Any]) -> None:
    merged = run("States.JsonMerge($.l, $.r, false)", {"l": left, "r": right})
    assert merged == {**left, **right}
    assert list(merged) == list({**left, **right})


@given(hs.lists(json_values, max_size=12))
def test_array_unique_keeps_first_occurrences_once(items: list[Any]) -> None:
    unique = run("States.ArrayUnique($.a)", {"a": items})
    keys = [json.dumps(x, sort_keys=True) for x in unique]
    assert len(keys) == len(set(keys))
    assert {json.dumps(x, sort_keys=True) for x in items} == set(keys)
    assert run("States.ArrayUnique($.a)", {"a": unique}) == unique


@given(hs.text(max_size=20), hs.lists(hs.text(max_size=6), max_size=4))
def test_format_fills_placeholders_in_order(prefix: str, values: list[str]) -> None:
    literal = (
        prefix.replace("\\", "\\\\").replace("'", "\\'").replace("{", "\\{").replace("}", "\\}")
    )
    template = literal + "{}" * len(values)
    args = "".join(f", $.v[{i}]" for i in range(len(values)))
    assert run(f"States.Format('{template}'{args})", {"v": values}) == prefix + "".join(values)


@given(json_values)
def test_json_to_string_and_string_to_json_round_trip(value: Any) -> None:
    text = run("States.JsonToString($.v)", {"v": value})
    assert run("States.StringToJson($.t)", {"t": text}) == (None if text.strip() == "" else value)


def test_format_value_writes_maps_like_java() -> None:
    assert format_value({"Arg1": 1, "Arg2": []}) == "{Arg1=1, Arg2=[]}"


# -- parity with moto ---------------------------------------------------------------------------

SAME_AS_MOTO: list[str] = [
    "States.Format('x{}y', $.objs)",
    "States.Format('{}|{}|{}|{}|{}', $.n, $.f, $.b, $.z, $.s)",
    "States.Format($.tpl, $.s, $.n)",
    "States.Format('{}', $.dup)",
    "States.StringToJson($.json)",
    "States.JsonToString($.objs)",
    "States.JsonToString($.nested)",
    "States.Array()",
    "States.Array($.s, 1, true, $.z, $.objs)",
    "States.ArrayPartition($.arr, 4)",
    "States.ArrayPartition($.arr, 20)",
    "States.ArrayPartition(States.Array(), 2)",
    "States.ArrayContains($.arr, 5)",
    "States.ArrayContains($.arr, 10)",
    "States.ArrayContains($.nested.list, $.nested.list[1])",
    "States.ArrayRange(1, 9, 2)",
    "States.ArrayRange(0, 10, 3)",
    "States.ArrayRange(5, 5, 1)",
    "States.ArrayGetItem($.arr, 5)",
    "States.ArrayGetItem($.nested.list, 0)",
    "States.ArrayLength($.arr)",
    "States.ArrayLength(States.Array())",
    "States.ArrayUnique($.arr)",
    "States.ArrayUnique(States.Array(1, 2, 2, 'a', 'a', 3))",
    "States.Base64Encode('Data to encode')",
    "States.Base64Decode($.b64)",
    "States.Hash('input data', 'MD5')",
    "States.Hash('input data', 'SHA-1')",
    "States.Hash('input data', 'SHA-256')",
    "States.Hash('input data', 'SHA-384')",
    "States.Hash($.s, 'SHA-512')",
    "States.JsonMerge($.objs, $.objs2, false)",
    "States.MathAdd($.n, -1)",
    "States.MathAdd($.f, 1)",
    "States.MathAdd(-3, -4)",
    "States.StringSplit($.text, '.+,=')",
    "States.StringSplit($.csv, ',')",
    "States.Format('{}-{}', States.ArrayLength($.arr), "
    "States.ArrayGetItem(States.StringSplit($.csv, ','), 2))",
    "States.ArrayLength($.nested.list[*].id)",
]

SAME_ERROR_AS_MOTO: list[str] = [
    "States.ArrayLength($.nope)",
    "States.Format('{}', $.nope)",
    "States.JsonMerge($.nope, $.objs, false)",
    "States.Array($.nested.nope.deeper)",
]

MOTO_RUNTIME_WHERE_WE_RAISE_INTRINSIC_FAILURE: list[str] = [
    "States.ArrayGetItem($.arr, 10)",
    "States.Hash('x', 'SHA-3')",
    "States.JsonMerge($.objs, $.objs2, true)",
    "States.StringToJson('{')",
    "States.ArrayRange(1, 2000, 1)",
    "States.MathAdd('1', 2)",
    "States.ArrayPartition($.arr, 0)",
    "States.Format('{} {}', $.n)",
    "States.ArrayLength($.s)",
]
"""Known deviation: moto turns every exception inside an intrinsic into `States.Runtime`. The ASL
spec names `States.IntrinsicFailure` for a failing intrinsic; we raise it for bad argument values
(a missing path argument stays `States.Runtime`, the text AWS writes for it)."""

MOTO_DEVIATIONS: list[tuple[str, Any, Outcome]] = [
    # moto passes the template to Python's str.format, so AWS's `\{` `\}` escapes crash it.
    (r"States.Format('\{\} {}', $.n)", "{} 3", Outcome.failed("States.Runtime")),
    # AWS allows a negative step ("a non-zero value"); moto rejects any step <= 0.
    ("States.ArrayRange(9, 1, -4)", [9, 5, 1], Outcome.failed("States.Runtime")),
    # moto's lenient base64 decoder drops invalid characters; AWS (Java's decoder) rejects them.
    ("States.Base64Decode('!!!')", StatesError.INTRINSIC_FAILURE, Outcome.succeeded({"r": ""})),
    # moto encodes strings as ASCII only; AWS encodes UTF-8.
    ("States.Base64Encode($.unicode)", "aMOpbGxvIHfDtnJsZA==", Outcome.failed("States.Runtime")),
    # moto de-duplicates through a dict, which fails on objects; AWS compares JSON values.
    (
        "States.ArrayUnique(States.Array($.objs, $.objs))",
        [DATA["objs"]],
        Outcome.failed("States.Runtime"),
    ),
    # moto's intrinsic grammar has no `null` literal: it drops it and the arguments after it.
    # We accept `null` as an argument; unverified against AWS.
    ("States.Array(null, 1)", [None, 1], Outcome.succeeded({"r": []})),
    # moto escapes non-ASCII characters as \\uXXXX; Jackson (AWS) writes them as they are.
    (
        "States.JsonToString($.unicode)",
        '"héllo wörld"',
        Outcome.succeeded({"r": '"h\\u00e9llo w\\u00f6rld"'}),
    ),
]


def _ours(expression: str) -> Outcome:
    return evaluate_locally(parameters_machine({"r.$": expression}), DATA)


@pytest.fixture(scope="module")
def moto_outcomes(moto_sfn: MotoStepFunctions) -> dict[str, Outcome]:
    expressions = (
        SAME_AS_MOTO
        + SAME_ERROR_AS_MOTO
        + MOTO_RUNTIME_WHERE_WE_RAISE_INTRINSIC_FAILURE
        + [case[0] for case in MOTO_DEVIATIONS]
    )
    outcomes = moto_sfn.run_all([(parameters_machine({"r.$": e}), DATA) for e in expressions])
    return dict(zip(expressions, outcomes, strict=True))


@pytest.mark.parametrize("expression", SAME_AS_MOTO)
def test_parity_with_moto(expression: str, moto_outcomes: dict[str, Outcome]) -> None:
    ours, theirs = _ours(expression), moto_outcomes[expression]
    assert theirs.status == "SUCCEEDED", theirs
    assert ours.same_result(theirs), (ours, theirs)


@pytest.mark.parametrize("expression", SAME_ERROR_AS_MOTO)
def test_error_parity_with_moto(expression: str, moto_outcomes: dict[str, Outcome]) -> None:
    ours, theirs = _ours(expression), moto_outcomes[expression]
    assert theirs.error == ours.error == StatesError.RUNTIME, (ours, theirs)
    assert ours.cause is not None and "could not be found in the input" in ours.cause


@pytest.mark.parametrize("expression", MOTO_RUNTIME_WHERE_WE_RAISE_INTRINSIC_FAILURE)
def test_known_deviation_intrinsic_failure_name(
    expression: str, moto_outcomes: dict[str, Outcome]
) -> None:
    assert moto_outcomes[expression].error == StatesError.RUNTIME
    assert _ours(expression).error == StatesError.INTRINSIC_FAILURE


@pytest.mark.parametrize(("expression", "aws", "moto"), MOTO_DEVIATIONS)
def test_known_deviations_from_moto(
    expression: str, aws: Any, moto: Outcome, moto_outcomes: dict[str, Outcome]
) -> None:
    assert moto_outcomes[expression].same_result(moto), moto_outcomes[expression]
    ours = _ours(expression)
    if isinstance(aws, StatesError):
        assert ours.error == aws
    else:
        assert ours == Outcome.succeeded({"r": aws})


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(hs.lists(hs.tuples(json_objects, json_objects), min_size=8, max_size=8))
def test_json_merge_and_format_parity_on_random_json(
    moto_sfn: MotoStepFunctions, pairs: list[tuple[dict[str, Any], dict[str, Any]]]
) -> None:
    machine = parameters_machine(
        {
            "merged.$": "States.JsonMerge($.l, $.r, false)",
            "text.$": "States.JsonToString($.l)",
            "length.$": "States.ArrayLength(States.Array($.l, $.r))",
        }
    )
    ascii_pairs = [
        (json.loads(json.dumps(left)), json.loads(json.dumps(right))) for left, right in pairs
    ]
    cases = [(machine, {"l": left, "r": right}) for left, right in ascii_pairs]
    for (definition, data), theirs in zip(cases, moto_sfn.run_all(cases), strict=True):
        ours = evaluate_locally(definition, data)
        assert ours.output["merged"] == theirs.output["merged"]
        assert json.loads(ours.output["text"]) == json.loads(theirs.output["text"])
        assert ours.output["length"] == theirs.output["length"] == 2
