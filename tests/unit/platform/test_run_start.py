"""run_start: inputs checked, and a sub-workflow run's enclosing budgets built from the link its
parent passes."""

from __future__ import annotations

from typing import Any

import pytest

from switchyard.contract import (
    CONTINUE_KEY,
    PARENT_LINK_KEY,
    PRIORITY_KEY,
    RunStartRequest,
    WorkflowInfo,
)
from switchyard.platform.run_start import InvalidRunInputError, start_run

SCHEMAS = {"document": {"type": "object"}}


def request(data: dict[str, Any], name: str = "child-run") -> RunStartRequest:
    return RunStartRequest(
        workflow=WorkflowInfo(name="summarize-document", version=1),
        inputs_schema=SCHEMAS,
        input=data,
        execution_id=f"arn:aws:states:us-east-1:123456789012:execution:summarize-document:{name}",
        execution_name=name,
        start_time="2026-01-01T00:00:00Z",
    )


def parent_run(**extra: Any) -> dict[str, Any]:
    return {
        "id": "parent-run",
        "workflow": "document-processing",
        "version": 1,
        "started_at": "2026-01-01T00:00:00Z",
        **extra,
    }


def test_a_child_run_counts_toward_its_parent_and_the_starting_step() -> None:
    link = {
        "run": parent_run(),
        "budget": {"max_cost_usd": 2.0},
        "step": "summarize_each",
        "item": ":3",
        "step_budget": {"max_cost_usd": 0.25, "max_tokens": 9000},
    }
    result = start_run(request({"document": {}, PARENT_LINK_KEY: link}))
    assert result.inputs == {"document": {}}  # the link is not an input
    assert [b.model_dump() for b in result.run.enclosing_budgets] == [
        {"kind": "run", "id": "parent-run", "max_cost_usd": 2.0, "max_tokens": None},
        {
            "kind": "step",
            "id": "parent-run:summarize_each:3",
            "max_cost_usd": 0.25,
            "max_tokens": 9000,
        },
    ]


def test_a_grandchild_keeps_every_ancestor_outermost_first() -> None:
    outer = {"kind": "run", "id": "root-run", "max_cost_usd": 5.0}
    link = {"run": parent_run(enclosing_budgets=[outer]), "step": "nested"}
    run = start_run(request({"document": {}, PARENT_LINK_KEY: link})).run
    assert [(b.kind, b.id, b.max_cost_usd) for b in run.enclosing_budgets] == [
        ("run", "root-run", 5.0),
        ("run", "parent-run", None),  # no limit of its own: still counted, for its totals
    ]


def test_a_run_started_by_hand_has_no_enclosing_budgets() -> None:
    assert start_run(request({"document": {}})).run.enclosing_budgets == []


def test_a_malformed_link_is_an_input_error() -> None:
    with pytest.raises(InvalidRunInputError, match="parent link"):
        start_run(request({"document": {}, PARENT_LINK_KEY: {"step": 7}}))


def test_a_child_run_of_a_map_spends_from_the_maps_budget() -> None:
    link = {
        "run": parent_run(),
        "step": "summarize_each",
        "item": ":0",
        "composite_budget": {"max_cost_usd": 0.5},
    }
    run = start_run(request({"document": {}, PARENT_LINK_KEY: link})).run
    assert [(b.kind, b.id, b.max_cost_usd) for b in run.enclosing_budgets] == [
        ("run", "parent-run", None),
        ("step", "parent-run:summarize_each", 0.5),  # the map's: no item, shared by all
    ]


def test_a_child_run_keeps_its_outputs_share_of_the_parents_state() -> None:
    link = {"run": parent_run(), "step": "summarize_each", "item": ":3", "output_limit": 573}
    assert start_run(request({"document": {}, PARENT_LINK_KEY: link})).run.output_limit == 573
    plain = {"run": parent_run(), "step": "summarize_each"}
    assert start_run(request({"document": {}, PARENT_LINK_KEY: plain})).run.output_limit is None


def start_with(data: dict[str, Any], workflow: str = "normal") -> str | None:
    started = start_run(
        request({"document": {}, **data}).model_copy(
            update={"workflow": WorkflowInfo(name="w", version=1, priority=workflow)}
        )
    )
    return started.run.priority


def test_a_run_has_its_workflows_priority_unless_started_with_its_own() -> None:
    assert start_with({}) is None  # normal, left out of the state
    assert start_with({}, workflow="low") == "low"
    assert start_with({PRIORITY_KEY: "high"}, workflow="low") == "high"
    assert start_with({PRIORITY_KEY: "normal"}, workflow="low") == "normal"


def test_a_child_run_has_its_parents_priority() -> None:
    link = {"run": parent_run(priority="high"), "step": "summarize"}
    assert start_with({PARENT_LINK_KEY: link}, workflow="low") == "high"
    link = {"run": parent_run(), "step": "summarize"}  # a normal parent: the child's own
    assert start_with({PARENT_LINK_KEY: link}, workflow="low") == "low"


def test_a_priority_that_is_not_one_is_an_input_error() -> None:
    with pytest.raises(InvalidRunInputError, match="'switchyard:priority' must be one of high"):
        start_with({PRIORITY_KEY: "urgent"})
    started = start_run(request({PRIORITY_KEY: "high", "document": {}}))
    assert started.inputs == {"document": {}}  # not an input of the workflow


# --- continue-as-new ----------------------------------------------------------------------------


def continuable(data: dict[str, Any], name: str = "run-1", version: int = 1) -> RunStartRequest:
    return request(data, name).model_copy(
        update={
            "continuable": True,
            "workflow": WorkflowInfo(name="summarize-document", version=version),
        }
    )


def handed_over(**extra: Any) -> dict[str, Any]:
    return {
        CONTINUE_KEY: {
            "loop": "refine",
            "segment": 3,
            "continued_from": "run-1-2",
            "run": {**parent_run(id="run-1", workflow="summarize-document"), "segment": 2},
            "inputs": {"document": {"title": "t"}},
            "steps": {"prep": {"status": "completed", "output": {"text": "notes"}}},
            "scope": {"iteration": 9, "previous": {"best": 0.4}, "meta": {"iterations": 9}},
            **extra,
        }
    }


def test_a_new_run_of_a_continuable_machine_is_segment_one_with_nothing_to_resume() -> None:
    result = start_run(continuable({"document": {}}))
    assert result.run.segment == 1 and result.run.continued_from is None
    assert result.steps == {} and result.resume == {}


def test_a_continued_segment_takes_back_the_run_its_state_and_its_loop() -> None:
    result = start_run(continuable(handed_over(), name="run-1-3"))
    assert result.run.id == "run-1"  # the logical run: budgets and keys go on
    assert (result.run.segment, result.run.continued_from) == (3, "run-1-2")
    assert result.inputs == {"document": {"title": "t"}}
    assert result.steps == {"prep": {"status": "completed", "output": {"text": "notes"}}}
    assert result.resume == {
        "loop": "refine",
        "scope": {"iteration": 9, "previous": {"best": 0.4}, "meta": {"iterations": 9}},
    }


def test_a_continuation_of_another_version_or_a_machine_without_such_loop_is_refused() -> None:
    with pytest.raises(InvalidRunInputError, match="runs summarize-document version 2"):
        start_run(continuable(handed_over(), name="run-1-3", version=2))
    with pytest.raises(InvalidRunInputError, match="has no continue_as_new loop"):
        start_run(request(handed_over(), name="run-1-3"))
    with pytest.raises(InvalidRunInputError, match="not a continuation"):
        start_run(continuable({CONTINUE_KEY: {"loop": "refine"}}, name="run-1-3"))


def test_a_run_id_too_long_for_its_segments_names_is_refused_up_front() -> None:
    start_run(continuable({"document": {}}, name="r" * 72))
    with pytest.raises(InvalidRunInputError, match="at most 72"):
        start_run(continuable({"document": {}}, name="r" * 73))


def test_the_child_of_a_replayed_sub_workflow_step_replays_the_first_child() -> None:
    reset = {"run": "first-run", "to": "notify", "reuse": {"summarize_each": "first-run"}}
    link = {"run": parent_run(reset=reset), "step": "summarize_each", "item": ":3"}
    run = start_run(request({"document": {}, PARENT_LINK_KEY: link})).run
    assert run.replays_child is not None
    assert run.replays_child.model_dump() == {
        "parent_run": "first-run",
        "step": "summarize_each",
        "item": ":3",
    }
    fresh = {**reset, "reuse": {"other": "first-run"}}  # the reset runs this step afresh
    link = {"run": parent_run(reset=fresh), "step": "summarize_each"}
    assert start_run(request({"document": {}, PARENT_LINK_KEY: link})).run.replays_child is None
