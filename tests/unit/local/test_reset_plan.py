"""Which steps a reset replays and which it runs afresh, read from the compiled machine: the
steps downstream of the reset's step (and the fallbacks standing in for them) run afresh; every
other step, parallel branches included, replays; a reset of a reset replays the first run."""

from __future__ import annotations

import pytest

from switchyard.compile import compile_workflow
from switchyard.contract import RESET_KEY, ResetFrom
from switchyard.local.reset import (
    OriginalRun,
    UnknownStepError,
    plan_reset,
    reset_input,
    step_graph,
)
from switchyard.local.run_actions import RunRef
from switchyard.validate import validate_file

WORKFLOW = """
switchyard: 1
name: diamond
version: 1
inputs: {}
steps:
  fetch: {type: tool, tool: http.request, args: {url: "https://example.com"}}
  left: {type: tool, after: [fetch], tool: http.request, args: {url: "https://example.com/l"},
         fallback: rescue}
  right: {type: tool, after: [fetch], tool: http.request, args: {url: "https://example.com/r"}}
  rescue: {type: tool, tool: http.request, args: {url: "https://example.com/x"}}
  join: {type: tool, after: [left, right], tool: http.request, args: {url: "https://example.com/j"}}
"""


@pytest.fixture(scope="module")
def definition(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("wf") / "diamond.yaml"
    path.write_text(WORKFLOW)
    result = validate_file(path)
    assert result.workflow is not None, [d.format() for d in result.errors]
    return compile_workflow(result.workflow).text


def test_the_graph_has_every_step_and_a_fallback_runs_after_its_step(definition: str) -> None:
    graph = step_graph(definition)
    assert set(graph) == {"fetch", "left", "right", "rescue", "join"}
    assert graph["rescue"] == ["left"]


def test_a_reset_to_a_branch_replays_the_other_branch(definition: str) -> None:
    plan = plan_reset(definition, "left", original_run="r1")
    assert plan.reuse == {"fetch": "r1", "right": "r1"}
    assert set(plan.fresh) == {"left", "rescue", "join"}


def test_a_reset_of_a_reset_replays_the_run_the_first_reset_replayed(definition: str) -> None:
    earlier = ResetFrom(run="r1", to="left", reuse={"fetch": "r1", "right": "r1"})
    plan = plan_reset(definition, "join", original_run="r2", previous=earlier)
    assert plan.reuse == {"fetch": "r1", "right": "r1", "left": "r2", "rescue": "r2"}
    assert plan.fresh == ("join",)


def test_an_unknown_step_is_refused_with_the_steps_there_are(definition: str) -> None:
    with pytest.raises(UnknownStepError, match="'nope' is not a step of this version"):
        plan_reset(definition, "nope", original_run="r1")


def test_the_new_input_drops_a_parent_link_and_an_earlier_reset(definition: str) -> None:
    ref = RunRef(1, "arn:x", "r2", "diamond", "failed")
    given = {"q": 1, "switchyard:parent": {"x": 1}, RESET_KEY: {"run": "r1", "to": "left"}}
    plan = plan_reset(definition, "join", original_run="r2")
    data = reset_input(OriginalRun(ref, "diamond", 1, given, {}), plan)
    assert data["q"] == 1 and "switchyard:parent" not in data
    assert data[RESET_KEY]["run"] == "r2" and data[RESET_KEY]["to"] == "join"
