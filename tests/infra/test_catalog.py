"""What the app deploys is read from statemachines/ and workflows/, and refused when stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.catalog import CatalogError, load_catalog
from tests.infra.synth import REPO


def _copy(tmp_path: Path, *names: str) -> tuple[Path, Path]:
    machines, workflows = tmp_path / "statemachines", tmp_path / "workflows"
    machines.mkdir()
    workflows.mkdir()
    for name in names:
        (machines / f"{name}.asl.json").write_text(
            (REPO / "statemachines" / f"{name}.asl.json").read_text()
        )
        (workflows / f"{name}.yaml").write_text((REPO / "workflows" / f"{name}.yaml").read_text())
    return machines, workflows


def test_the_repository_catalog_names_functions_children_and_triggers() -> None:
    catalog = {m.name: m for m in load_catalog(REPO / "statemachines", REPO / "workflows")}
    parent = catalog["document-processing"]
    assert [(c.workflow, c.version) for c in parent.children] == [("summarize-document", 1)]
    assert "router_step" not in [f.value for f in parent.functions]
    assert "router_step" in [f.value for f in catalog["content-moderation"].functions]
    assert [t.type for t in catalog["content-moderation"].triggers] == ["event"]
    assert all(m.uses_dead_letter_queue for m in catalog.values())


def test_a_parent_without_its_child_is_refused(tmp_path: Path) -> None:
    machines, workflows = _copy(tmp_path, "document-processing")
    with pytest.raises(CatalogError, match="SummarizeDocumentV1StateMachineArn"):
        load_catalog(machines, workflows)


def test_a_stale_machine_is_refused(tmp_path: Path) -> None:
    machines, workflows = _copy(tmp_path, "customer-support")
    path = workflows / "customer-support.yaml"
    path.write_text(path.read_text().replace("version: 1", "version: 2", 1))
    with pytest.raises(CatalogError, match="recompile"):
        load_catalog(machines, workflows)


def test_a_workflow_with_triggers_but_no_machine_is_refused(tmp_path: Path) -> None:
    machines, workflows = _copy(tmp_path)
    (workflows / "content-moderation.yaml").write_text(
        (REPO / "workflows" / "content-moderation.yaml").read_text()
    )
    with pytest.raises(CatalogError, match="no compiled machine"):
        load_catalog(machines, workflows)


def test_a_file_that_is_not_a_compiled_machine_is_refused(tmp_path: Path) -> None:
    machines, workflows = _copy(tmp_path)
    (machines / "other.asl.json").write_text(json.dumps({"StartAt": "a", "States": {}}))
    with pytest.raises(CatalogError, match="not a switchyard machine"):
        load_catalog(machines, workflows)


def test_a_machine_with_tool_steps_but_no_workflow_file_is_refused(tmp_path: Path) -> None:
    machines, workflows = _copy(tmp_path, "customer-support")
    (workflows / "customer-support.yaml").unlink()
    with pytest.raises(CatalogError, match="no file in the workflows folder holds workflow"):
        load_catalog(machines, workflows)


def test_each_machine_carries_its_workflow_for_the_tools_permissions() -> None:
    catalog = {m.name: m for m in load_catalog(REPO / "statemachines", REPO / "workflows")}
    for name, machine in catalog.items():
        assert machine.workflow is not None and machine.workflow.name == name
