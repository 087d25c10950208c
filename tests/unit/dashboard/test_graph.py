"""The run page's graph is read back from the compiled machine: every step of every example and
scenario workflow is found, with the dependencies its file declares, whatever marks the compiler
leaves for it (a router without a check, a map, a step with or without a `when`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchyard.compile import compile_workflow
from switchyard.dashboard.graph import workflow_graph
from switchyard.model import Workflow
from switchyard.validate import validate_file
from tests.conftest import REPO, WORKFLOWS
from tests.scenarios.harness.scenario import load_scenario


def _workflows() -> list[tuple[str, Workflow]]:
    found: list[tuple[str, Workflow]] = []
    for path in sorted(WORKFLOWS.glob("*.yaml")):
        workflow = validate_file(path).workflow
        assert workflow is not None
        found.append((f"example {path.stem}", workflow))
    for path in sorted((REPO / "tests" / "scenarios" / "cases").glob("*.yaml")):
        found.append((f"scenario {Path(path).stem}", load_scenario(path).workflow))
    return found


@pytest.mark.parametrize(("name", "workflow"), _workflows(), ids=lambda v: str(v)[:40])
def test_every_step_is_drawn_after_what_it_declares(name: str, workflow: Workflow) -> None:
    graph = workflow_graph(compile_workflow(workflow).text, [])
    drawn = {node["id"]: node for node in graph["nodes"]}
    assert set(workflow.steps) <= set(drawn), name
    for step_id, step in workflow.steps.items():
        after = drawn[step_id]["after"]
        if step.type == "sub_workflow" and not step.when:
            # A child's Task carries no spec: its edges are the paths its input reads, which
            # can be fewer than it declares (docs/dashboard.md, "The graph").
            assert set(after) <= set(step.after), (name, step_id)
        elif step.after:
            assert after == list(step.after), (name, step_id)


def test_the_routers_and_maps_of_the_examples_have_their_kinds() -> None:
    kinds = {}
    for name, workflow in _workflows():
        if name.startswith("example"):
            graph = workflow_graph(compile_workflow(workflow).text, [])
            kinds.update({(name, node["id"]): node["kind"] for node in graph["nodes"]})
    assert kinds[("example content-moderation", "triage")] == "router"
    assert kinds[("example document-processing", "summarize_each")] == "map"
