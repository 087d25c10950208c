"""Each step's share of a run's 256 KB state, and what cannot fit."""

from __future__ import annotations

import importlib.util
from typing import Any

from switchyard.contract import LARGE_OUTPUT_BYTES
from switchyard.model import Workflow
from switchyard.validate import validate_file, validate_text
from switchyard.validate.payload_size import (
    MIN_INLINE_BYTES,
    STATE_LIMIT,
    payload_plan,
    schema_bytes,
)
from tests.conftest import REPO

TOOL = {"type": "tool", "tool": "http.request", "args": {"url": "https://example.com"}}


def workflow(steps: dict[str, Any], inputs: dict[str, Any] | None = None) -> Workflow:
    return Workflow.model_validate(
        {"switchyard": 1, "name": "w", "version": 1, "inputs": inputs or {}, "steps": steps}
    )


def test_a_few_steps_keep_the_default_limit() -> None:
    plan = payload_plan(workflow({"a": TOOL, "b": {**TOOL, "after": ["a"]}}))
    assert plan.limit("a") == plan.limit("b") == LARGE_OUTPUT_BYTES
    assert plan.worst_case <= STATE_LIMIT and not plan.problems


def test_many_steps_share_the_state_and_the_worst_case_fits() -> None:
    steps = {f"s{n}": TOOL for n in range(20)}
    plan = payload_plan(workflow(steps))
    assert MIN_INLINE_BYTES <= plan.limit("s0") < LARGE_OUTPUT_BYTES
    assert plan.worst_case <= STATE_LIMIT and not plan.problems


def test_a_maps_items_share_its_part_by_max_items() -> None:
    inputs = {"docs": {"type": "array", "maxItems": 200, "items": {"type": "string"}}}
    steps = {"each": {"type": "map", "items": "{{ inputs.docs }}", "step": TOOL}}
    plan = payload_plan(workflow(steps, inputs))
    assert MIN_INLINE_BYTES <= plan.limit("each") < 1024
    assert plan.worst_case <= STATE_LIMIT


def test_a_map_too_large_even_as_references_is_refused() -> None:
    inputs = {"docs": {"type": "array", "maxItems": 2000, "items": {"type": "string"}}}
    steps = {"each": {"type": "map", "items": "{{ inputs.docs }}", "step": TOOL}}
    plan = payload_plan(workflow(steps, inputs))
    [problem] = plan.problems
    assert problem.refused and problem.step_id == "each"
    assert "2000 items" in problem.message and "Lower maxItems" in problem.message


def test_a_map_without_max_items_is_assumed_and_said() -> None:
    steps = {"each": {"type": "map", "items": "{{ inputs.docs }}", "step": TOOL}}
    plan = payload_plan(workflow(steps, {"docs": {"type": "array"}}))
    [problem] = plan.problems
    assert not problem.refused and "assumed 40 items" in problem.message


def test_schema_bytes_bounds_what_the_schema_bounds() -> None:
    assert schema_bytes({"type": "string", "maxLength": 10}) == 42
    assert schema_bytes({"type": "string"}) is None
    assert schema_bytes({"enum": ["low", "high"]}) == 6
    closed = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert schema_bytes(closed) == 2 + 4 + 2 + 24
    assert schema_bytes({**closed, "additionalProperties": True}) is None
    assert schema_bytes({"type": "array", "maxItems": 3, "items": closed}) == 2 + 3 * 33


def test_document_processing_gives_each_of_its_200_children_a_share() -> None:
    result = validate_file(REPO / "workflows" / "document-processing.yaml")
    assert result.workflow is not None
    plan = payload_plan(result.workflow)
    assert plan.limit("summarize_each") * 200 < 128 * 1024
    assert plan.worst_case <= STATE_LIMIT


def test_a_large_map_of_small_outputs_fits_by_their_output_schema() -> None:
    inputs = {"docs": {"type": "array", "maxItems": 2000, "items": {"type": "string"}}}
    step = {**TOOL, "output_schema": {"enum": ["spam", "ham"]}}
    steps = {"each": {"type": "map", "items": "{{ inputs.docs }}", "step": step}}
    plan = payload_plan(workflow(steps, inputs))
    assert not plan.problems and plan.worst_case <= STATE_LIMIT


def test_a_thousand_unbounded_outputs_cannot_share_one_state() -> None:
    """Each keeps at least a reference to the output store (512 B): 1,000 of them are over
    256 KB, so the validator refuses the workflow."""
    plan = payload_plan(workflow({f"s{n}": TOOL for n in range(1000)}))
    assert plan.worst_case > STATE_LIMIT
    assert [p.refused for p in plan.problems] == [True]


def test_the_benchmarks_thousand_step_workflow_fits_one_state() -> None:
    """benchmarks/compile.py and validate.py need a workflow that validates: its agents answer
    small closed objects, which leave room for its tools' references."""
    spec = importlib.util.spec_from_file_location("synthetic", REPO / "benchmarks/synthetic.py")
    assert spec is not None and spec.loader is not None
    synthetic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synthetic)
    for shape in ("blocks", "layers"):
        result = validate_text(synthetic.synthetic_workflow(1000, shape=shape))
        assert result.ok, [d.format() for d in result.diagnostics[:3]]
