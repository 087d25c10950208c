"""InputPath / ResultPath / OutputPath, unit tests and parity with moto."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from switchyard.engine.asl import (
    AslFailure,
    StatesError,
    apply_input_path,
    apply_output_path,
    apply_result_path,
    compile_path,
    compile_reference_path,
)
from tests.unit.engine.asl.moto_sfn import (
    MotoStepFunctions,
    Outcome,
    evaluate_locally,
    pass_machine,
)

DATA: dict[str, Any] = {"a": {"b": 1}, "s": "str", "arr": [1, {"x": 1}], "n": None, "list": []}


def result_path(text: str | None) -> Any:
    return None if text is None else compile_reference_path(text)


class TestResultPath:
    def test_null_discards_the_result(self) -> None:
        assert apply_result_path(None, DATA, {"r": 1}) is DATA

    def test_root_replaces_the_input(self) -> None:
        assert apply_result_path(result_path("$"), DATA, 7) == 7

    def test_writes_into_a_copy_creating_objects_on_the_way(self) -> None:
        before = copy.deepcopy(DATA)
        out = apply_result_path(result_path("$.new.deep['x y']"), DATA, 5)
        assert out == {**DATA, "new": {"deep": {"x y": 5}}}
        assert before == DATA
        assert out["a"] is DATA["a"]  # untouched branches are shared, not copied

    def test_overwrites_existing_values_and_writes_into_arrays(self) -> None:
        assert apply_result_path(result_path("$.a"), DATA, 2)["a"] == 2
        assert apply_result_path(result_path("$.arr[1].y"), DATA, 2)["arr"] == [1, {"x": 1, "y": 2}]
        assert apply_result_path(result_path("$.arr[-1]"), DATA, 2)["arr"] == [1, 2]

    @pytest.mark.parametrize(
        ("path", "data"),
        [
            ("$.s.x", DATA),
            ("$.n.x", DATA),
            ("$.arr.x", DATA),
            ("$.arr[5]", DATA),
            ("$.a[0]", DATA),
            ("$.x", "plain"),
            ("$.x", [1, 2]),
        ],
    )
    def test_writing_through_a_non_object_is_a_match_failure(self, path: str, data: Any) -> None:
        with pytest.raises(AslFailure) as caught:
            apply_result_path(result_path(path), data, 1)
        assert caught.value.error == StatesError.RESULT_PATH_MATCH_FAILURE
        assert caught.value.cause.startswith(f"Unable to apply ReferencePath {path} to input ")


class TestInputOutputPath:
    def test_null_gives_an_empty_object(self) -> None:
        assert apply_input_path(None, DATA) == {}
        assert apply_output_path(None, DATA) == {}

    def test_selects_a_node(self) -> None:
        assert apply_input_path(compile_path("$.a"), DATA) == {"b": 1}
        assert apply_output_path(compile_path("$.arr[*]"), DATA) == DATA["arr"]

    def test_a_miss_is_a_runtime_error_with_jayways_message(self) -> None:
        with pytest.raises(AslFailure) as caught:
            apply_input_path(compile_path("$.a.nope"), DATA)
        assert caught.value.error == StatesError.RUNTIME
        assert caught.value.cause == "Invalid path '$.a.nope' : No results for path: $['a']['nope']"


# -- parity with moto: a Pass state with InputPath / Result / ResultPath / OutputPath ------------

SAME_AS_MOTO: list[dict[str, Any]] = [
    {},
    {"InputPath": "$.a"},
    {"InputPath": None},
    {"OutputPath": None},
    {"OutputPath": "$.a.b"},
    {"Result": {"r": 1}},
    {"Result": {"r": 1}, "ResultPath": "$.res"},
    {"Result": {"r": 1}, "ResultPath": None},
    {"Result": {"r": 1}, "ResultPath": "$.new.deep.er"},
    {"Result": {"r": 1}, "ResultPath": "$.a"},
    {"Result": {"r": 1}, "ResultPath": "$.a.c"},
    {"Result": 5, "ResultPath": "$.arr[1].y"},
    {"Result": 5, "ResultPath": "$['a']['sp ace']"},
    {"InputPath": "$.a", "Result": 2, "ResultPath": "$.r", "OutputPath": "$.r"},
    {"InputPath": "$.a", "ResultPath": "$.copy"},
    {"InputPath": "$.a", "Parameters": {"v.$": "$.b"}, "ResultPath": "$.p", "OutputPath": "$.p"},
    {"Parameters": {"v.$": "$.a"}, "ResultPath": "$.a.inner"},
    {"InputPath": "$.arr[*]"},
    {"Result": [1, 2], "ResultPath": "$.list", "OutputPath": "$.list"},
]
RUNTIME_IN_BOTH: list[dict[str, Any]] = [
    {"InputPath": "$.nope"},
    {"OutputPath": "$.nope"},
    {"Result": {"r": 1}, "ResultPath": "$.res", "OutputPath": "$.missing"},
]
MOTO_DEVIATIONS: list[tuple[dict[str, Any], Any, StatesError | None, Outcome]] = [
    # Writing below a string: AWS documents States.ResultPathMatchFailure; moto's jsonpath-ng
    # update raises a TypeError, reported as States.Runtime.
    ({"Result": 1, "ResultPath": "$.s.x"}, DATA, StatesError.RESULT_PATH_MATCH_FAILURE,
     Outcome.failed(StatesError.RUNTIME)),
    ({"Result": 1, "ResultPath": "$.x"}, [1, 2], StatesError.RESULT_PATH_MATCH_FAILURE,
     Outcome.failed(StatesError.RUNTIME)),
    # Below a null value moto silently drops the result; an index past the end pads the array
    # with {}. We fail with ResultPathMatchFailure in both (AWS's exact answer is unverified).
    ({"Result": 1, "ResultPath": "$.n.x"}, DATA, StatesError.RESULT_PATH_MATCH_FAILURE,
     Outcome.succeeded(DATA)),
    ({"Result": 5, "ResultPath": "$.arr[3]"}, DATA, StatesError.RESULT_PATH_MATCH_FAILURE,
     Outcome.succeeded({**DATA, "arr": [1, {"x": 1}, {}, 5]})),
]  # fmt: skip


@pytest.fixture(scope="module")
def moto_outcomes(moto_sfn: MotoStepFunctions) -> list[Outcome]:
    cases = [(pass_machine(s), DATA) for s in SAME_AS_MOTO + RUNTIME_IN_BOTH]
    cases += [(pass_machine(s), data) for s, data, _, _ in MOTO_DEVIATIONS]
    return moto_sfn.run_all(cases)


@pytest.mark.parametrize("index", range(len(SAME_AS_MOTO)))
def test_parity_with_moto(index: int, moto_outcomes: list[Outcome]) -> None:
    ours = evaluate_locally(pass_machine(SAME_AS_MOTO[index]), DATA)
    assert moto_outcomes[index].status == "SUCCEEDED", moto_outcomes[index]
    assert ours == moto_outcomes[index]


@pytest.mark.parametrize("index", range(len(RUNTIME_IN_BOTH)))
def test_runtime_errors_in_both(index: int, moto_outcomes: list[Outcome]) -> None:
    ours = evaluate_locally(pass_machine(RUNTIME_IN_BOTH[index]), DATA)
    theirs = moto_outcomes[len(SAME_AS_MOTO) + index]
    assert ours.error == theirs.error == StatesError.RUNTIME
    assert theirs.cause is not None and ours.cause is not None
    assert theirs.cause.endswith(ours.cause)  # moto adds the state prefix the interpreter adds


@pytest.mark.parametrize("index", range(len(MOTO_DEVIATIONS)))
def test_known_moto_deviations(index: int, moto_outcomes: list[Outcome]) -> None:
    state, data, our_error, moto = MOTO_DEVIATIONS[index]
    assert moto_outcomes[len(SAME_AS_MOTO) + len(RUNTIME_IN_BOTH) + index].same_result(moto)
    assert evaluate_locally(pass_machine(state), data).error == our_error
