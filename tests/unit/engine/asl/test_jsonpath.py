"""JSONPath: reference paths, query paths, and parity with moto for every supported form."""

from __future__ import annotations

from typing import Any

import pytest

from switchyard.engine.asl import (
    InvalidPathError,
    PathNotFoundError,
    QueryPath,
    ReferencePath,
    StatesError,
    compile_context_path,
    compile_path,
    compile_reference_path,
)
from tests.unit.engine.asl.moto_sfn import (
    MotoStepFunctions,
    Outcome,
    evaluate_locally,
    parameters_machine,
)

DOC: dict[str, Any] = {
    "foo": 123,
    "bar": ["a", "b", "c"],
    "car": {"cdr": True},
    "jar": [{"a": 1}, {"a": 5}, {"a": 2}, {"a": 7}, {"a": 3}],
    "a b": {"c.d": "spaced"},
    "x": {"y": {"z": 1}, "z": 2},
    "steps": [{"name": "one"}, {"name": "two", "out": {"v": [10, 20]}}],
    "nothing": None,
    "empty": [],
}


class TestCompile:
    @pytest.mark.parametrize(
        ("text", "steps"),
        [
            ("$", ()),
            ("$.foo", ("foo",)),
            ("$.car.cdr", ("car", "cdr")),
            ("$.bar[0]", ("bar", 0)),
            ("$['a b']['c.d']", ("a b", "c.d")),
            ('$["a b"]', ("a b",)),
            ("$.abc.['def ghi']", ("abc", "def ghi")),
            ("$[1].steps", (1, "steps")),
            ("$.bar[-1]", ("bar", -1)),
            ("$.with-dash_and_digits9", ("with-dash_and_digits9",)),
            (r"$['it\'s']", ("it's",)),
        ],
    )
    def test_reference_paths_are_parsed_by_hand(self, text: str, steps: tuple[Any, ...]) -> None:
        path = compile_path(text)
        assert isinstance(path, ReferencePath)
        assert path.steps == steps
        assert compile_reference_path(text) == path

    @pytest.mark.parametrize(
        "text", ["$.bar[*]", "$..z", "$.bar[1:]", "$.jar[?(@.a >= 5)]", "$.bar[0,2]", "$.x.*"]
    )
    def test_other_jsonpath_is_a_query(self, text: str) -> None:
        assert isinstance(compile_path(text), QueryPath)
        with pytest.raises(InvalidPathError):
            compile_reference_path(text)

    @pytest.mark.parametrize("text", ["foo", "$.", "$.a[", "$$.a", "", "$.a[?(@.b >"])
    def test_invalid_paths(self, text: str) -> None:
        with pytest.raises(InvalidPathError):
            compile_path(text)

    def test_compiled_paths_are_cached(self) -> None:
        assert compile_path("$.foo") is compile_path("$.foo")

    def test_context_paths_drop_one_dollar(self) -> None:
        assert compile_context_path("$$.Execution.Id") == compile_path("$.Execution.Id")
        with pytest.raises(InvalidPathError):
            compile_context_path("$.a")


class TestEvaluate:
    def test_definite_paths_give_the_node_itself(self) -> None:
        assert compile_path("$").evaluate(DOC) is DOC
        assert compile_path("$.steps[1].name").evaluate(DOC) == "two"
        assert compile_path("$.steps[1].out.v[0]").evaluate(DOC) == 10
        assert compile_path("$['a b']['c.d']").evaluate(DOC) == "spaced"
        assert compile_path("$.nothing").evaluate(DOC) is None
        assert compile_path("$.bar[-1]").evaluate(DOC) == "c"

    def test_an_index_past_the_end_is_null_unless_strict(self) -> None:
        path = compile_path("$.bar[5]")
        assert path.evaluate(DOC) is None
        with pytest.raises(PathNotFoundError):
            path.evaluate(DOC, strict=True)
        assert not path.exists(DOC)

    @pytest.mark.parametrize(
        "text", ["$.nope", "$.foo.bar", "$.foo[0]", "$.bar.x", "$.nothing.x", "$.bar[5].x"]
    )
    def test_misses(self, text: str) -> None:
        with pytest.raises(PathNotFoundError) as caught:
            compile_path(text).evaluate(DOC)
        assert caught.value.path == text
        assert not compile_path(text).exists(DOC)

    def test_queries_give_lists(self) -> None:
        assert compile_path("$.jar[?(@.a >= 5)]").evaluate(DOC) == [{"a": 5}, {"a": 7}]
        assert compile_path("$.jar[*].a").evaluate(DOC) == [1, 5, 2, 7, 3]
        assert compile_path("$.bar[1:]").evaluate(DOC) == ["b", "c"]
        assert compile_path("$..z").evaluate(DOC) == [2, 1]
        assert compile_path("$.jar[?(@.a > 100)]").evaluate(DOC) == []
        assert compile_path("$.missing[*]").evaluate(DOC) == []


# -- parity with moto: the same paths as `.$` payload fields ---------------------------------------

SAME_AS_MOTO = [
    "$",
    "$.foo",
    "$.bar",
    "$.car.cdr",
    "$.bar[0]",
    "$.bar[2]",
    "$.steps[1].out.v[0]",
    "$.car.['cdr']",
    "$['a b']",
    "$['a b']['c.d']",
    "$.nothing",
    "$.jar[?(@.a >= 5)]",
    "$.jar[*].a",
    "$.bar[*]",
    "$.bar[1:]",
    "$.bar[0,2]",
    "$..z",
    "$.x.*",
    "$.empty[*]",
    "$.missing[*]",
]

MISSING_IN_BOTH = ["$.nope", "$.foo.bar", "$.car.cdr.x", "$.nothing.x"]

KNOWN_MOTO_DEVIATIONS: list[tuple[str, Any, Outcome]] = [
    # moto bug: a path through an index returns a list (getmoto/moto#7825's fix over-applies);
    # AWS evaluates a definite path to the node itself.
    ("$.steps[1].name", "two", Outcome.succeeded({"r": ["two"]})),
    # jsonpath-ng reports a negative index as a list and moto keeps it; Jayway (AWS) treats
    # `[-1]` as a definite index from the end.
    ("$.bar[-1]", "c", Outcome.succeeded({"r": ["c"]})),
    # An index past the end: Jayway over Jackson answers null (AWS, captured in us-east-1);
    # jsonpath-ng finds nothing and moto fails.
    ("$.bar[5]", None, Outcome.failed(StatesError.RUNTIME)),
    # An indefinite path with no match is [] in Jayway (AWS); moto only knows that for wildcards
    # and slices and fails for a filter.
    ("$.jar[?(@.a > 100)]", [], Outcome.failed(StatesError.RUNTIME)),
]


@pytest.fixture(scope="module")
def moto_outcomes(moto_sfn: MotoStepFunctions) -> dict[str, Outcome]:
    paths = SAME_AS_MOTO + MISSING_IN_BOTH + [case[0] for case in KNOWN_MOTO_DEVIATIONS]
    outcomes = moto_sfn.run_all([(parameters_machine({"r.$": p}), DOC) for p in paths])
    outcomes.append(moto_sfn.run(parameters_machine({"r.$": "$[1].steps"}), [{}, {"steps": 3}]))
    return dict(zip([*paths, "$[1].steps"], outcomes, strict=True))


def _ours(path: str, data: Any = DOC) -> Outcome:
    return evaluate_locally(parameters_machine({"r.$": path}), data)


@pytest.mark.parametrize("path", SAME_AS_MOTO)
def test_parity_with_moto(path: str, moto_outcomes: dict[str, Outcome]) -> None:
    theirs = moto_outcomes[path]
    assert theirs.status == "SUCCEEDED", theirs
    assert _ours(path) == Outcome.succeeded(theirs.output)


@pytest.mark.parametrize("path", MISSING_IN_BOTH)
def test_missing_path_parity_with_moto(path: str, moto_outcomes: dict[str, Outcome]) -> None:
    ours = _ours(path)
    assert moto_outcomes[path].error == ours.error == StatesError.RUNTIME
    assert ours.cause == (
        f"The JSONPath '{path}' specified for the field 'r.$' could not be found in the input "
        f"'{_compact(DOC)}'"
    )


@pytest.mark.parametrize(("path", "aws", "moto"), KNOWN_MOTO_DEVIATIONS)
def test_known_moto_deviations(
    path: str, aws: Any, moto: Outcome, moto_outcomes: dict[str, Outcome]
) -> None:
    assert moto_outcomes[path].same_result(moto), moto_outcomes[path]
    assert _ours(path) == Outcome.succeeded({"r": aws})


def test_known_moto_deviation_index_then_property_on_an_array_input(
    moto_outcomes: dict[str, Outcome],
) -> None:
    # The quirk the brief names: `$[1].steps` on an array gives a list in moto, the value on AWS.
    assert moto_outcomes["$[1].steps"] == Outcome.succeeded({"r": [3]})
    assert _ours("$[1].steps", [{}, {"steps": 3}]) == Outcome.succeeded({"r": 3})


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
