"""Reading a state's write back from its history event, and the catcher that caught an error:
the parts of `switchyard.records.history` that need no Step Functions."""

from __future__ import annotations

import itertools
import json

import pytest

from switchyard.constants import RECORDER_FUNCTIONS_ENV
from switchyard.engine.asl.retry_catch import error_matches as engine_error_matches
from switchyard.records.history import UNKNOWN, error_matches, state_writes, written_value
from switchyard.records.recorder import function_names
from tests.conftest import REPO

RECORD = {"status": "completed", "output": {"text": "ok"}}


@pytest.mark.parametrize(
    ("output", "result_path", "output_path", "written"),
    [
        ({"steps": {"a": RECORD}}, "$.steps.a", "$", RECORD),  # no OutputPath
        ({"a": RECORD, "b": {}}, "$.steps.a", "$.steps", RECORD),  # OutputPath above it
        (RECORD, "$.steps.a", "$.steps.a", RECORD),  # OutputPath at it
        ({"error": {}}, "$", "$.Payload", {"Payload": {"error": {}}}),  # a tail's `$` write
        ({"text": "ok"}, "$.steps.a", "$.steps.a.output", {"output": {"text": "ok"}}),
        ({"steps": {}}, "$.steps.a", "$", UNKNOWN),  # not in the output
        ({"x": 1}, "$.steps.a", "$.result.output", UNKNOWN),  # beside it: not shown
        ({"x": 1}, "$.steps.a", None, UNKNOWN),  # OutputPath null: `{}` shows nothing
        ({"x": 1}, "$['steps']['a']", "$", UNKNOWN),  # bracket paths: not compiled by us
    ],
)
def test_the_value_a_state_wrote_is_read_back_from_its_output(
    output: object, result_path: str, output_path: str | None, written: object
) -> None:
    assert written_value(output, result_path, output_path) == written


def test_catchers_match_errors_as_the_engine_and_step_functions_do() -> None:
    lists = [("States.ALL",), ("States.TaskFailed",), ("timeout", "States.Timeout"), ("budget",)]
    errors = ["budget", "timeout", "States.Timeout", "States.Runtime", "States.DataLimitExceeded"]
    for error_equals, error in itertools.product(lists, errors):
        expected = engine_error_matches(error_equals, error)
        assert error_matches(error_equals, error) == expected, (error_equals, error)


def test_every_writing_state_of_a_compiled_machine_is_found_branches_and_maps_included() -> None:
    definition = json.loads((REPO / "statemachines" / "document-processing.asl.json").read_text())
    writes = state_writes(definition)
    assert writes["summarize_each"].result_path == "$.result"  # inside the map's processor
    assert writes["summarize_each"].output_path == "$.result.output"
    choices = [n for n, s in _states(definition) if s["Type"] in ("Choice", "Fail", "Succeed")]
    assert choices and not set(choices) & set(writes)
    for name, state in _states(definition):
        if state["Type"] in ("Pass", "Task", "Parallel", "Map"):
            catchers = [c.get("ResultPath", "$") for c in state.get("Catch", [])]
            assert [path for _, path in writes[name].catchers] == catchers, name


def _states(machine: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    found: list[tuple[str, dict[str, object]]] = []
    for name, state in machine["States"].items():  # type: ignore[attr-defined]
        found.append((name, state))
        for branch in state.get("Branches", []):
            found += _states(branch)
        if "ItemProcessor" in state:
            found += _states(state["ItemProcessor"])
    return found


def test_the_step_functions_deployed_names_are_read_from_the_environment() -> None:
    assert function_names({}) == {}
    given = {RECORDER_FUNCTIONS_ENV: json.dumps({"agent_step": "Switchyard-AgentStep-1A2B"})}
    assert function_names(given) == {"Switchyard-AgentStep-1A2B": "agent_step"}
    with pytest.raises(ValueError, match="JSON object of folder names to function names"):
        function_names({RECORDER_FUNCTIONS_ENV: '["agent_step"]'})
