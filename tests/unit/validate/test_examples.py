"""The example workflows are valid, and realistic enough to use every step type."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchyard.model import (
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    RuleRouter,
    ScoreRouter,
    Workflow,
)
from switchyard.validate import validate_file
from tests.conftest import WORKFLOWS

EXAMPLES = sorted(WORKFLOWS.glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_is_valid(path: Path) -> None:
    result = validate_file(path)
    assert [d.format() for d in result.diagnostics] == []
    assert result.workflow is not None


def _load(name: str) -> Workflow:
    workflow = validate_file(WORKFLOWS / f"{name}.yaml").workflow
    assert workflow is not None
    return workflow


def test_examples_use_every_step_type() -> None:
    steps = [step for path in EXAMPLES for step in _load(path.stem).steps.values()]
    inline = [step.step for step in steps if isinstance(step, MapStep | LoopStep)]
    used = {step.type for step in [*steps, *inline]}
    assert used == {"agent", "tool", "human_gate", "router", "sub_workflow", "map", "loop"}
    strategies = {s.strategy for s in steps if isinstance(s, RuleRouter | ScoreRouter | LlmRouter)}
    assert {"score", "llm"} <= strategies


def test_customer_support_is_the_seed_pipeline() -> None:
    workflow = _load("customer-support")
    assert list(workflow.steps) == [
        "classify", "research", "fetch_history", "draft", "approve", "send",
    ]  # fmt: skip
    assert workflow.steps["draft"].after == ["research", "fetch_history"]
    assert isinstance(workflow.steps["approve"], HumanGateStep)


def test_document_processing_maps_a_sub_workflow_per_document() -> None:
    workflow = _load("document-processing")
    mapped = workflow.steps["summarize_each"]
    assert isinstance(mapped, MapStep)
    assert mapped.step.type == "sub_workflow"


def test_content_moderation_has_score_and_llm_routers_a_loop_and_a_fallback() -> None:
    workflow = _load("content-moderation")
    assert isinstance(workflow.steps["triage"], ScoreRouter)
    assert isinstance(workflow.steps["borderline"], LlmRouter)
    refine = workflow.steps["refine"]
    assert isinstance(refine, LoopStep) and refine.max_iterations <= 100
    assert workflow.steps["block"].fallback == "block_by_queue"
