"""Installing workflows into the local engine: sub-workflows first, pinned versions on aliases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from switchyard.engine.arns import Arns
from switchyard.engine.store import EngineStore
from switchyard.local.workflows import WorkflowFileError, install

CHILD = """\
switchyard: 1
name: enrich
version: {version}
steps:
  lookup: {{type: tool, tool: http.request, args: {{url: "https://example.com/v{version}"}}}}
"""
PARENT = """\
switchyard: 1
name: parent
version: 1
steps:
  pinned: {type: sub_workflow, workflow: enrich@1}
  newest: {type: sub_workflow, workflow: enrich}
"""


def child_starts(states: dict[str, Any]) -> set[str]:
    """The StateMachineArn of every child start, inside Parallel branches too."""
    found: set[str] = set()
    for state in states.values():
        arn = state.get("Parameters", {}).get("StateMachineArn")
        if arn:
            found.add(arn)
        for branch in state.get("Branches", []):
            found |= child_starts(branch["States"])
    return found


def test_a_pinned_sub_workflow_starts_its_versions_alias(pg_conninfo: str, tmp_path: Path) -> None:
    (tmp_path / "enrich-v1.yaml").write_text(CHILD.format(version=1))
    (tmp_path / "enrich-v2.yaml").write_text(CHILD.format(version=2))
    (tmp_path / "parent.yaml").write_text(PARENT)
    arns = Arns()
    with psycopg.connect(pg_conninfo, autocommit=True) as conn:
        store = EngineStore(conn)
        parent = install(store, arns, tmp_path / "parent.yaml")
        machine = store.machine(parent.machine_arn)
        assert machine is not None
        child = arns.machine("enrich")
        assert child_starts(json.loads(machine.definition)["States"]) == {f"{child}:v1", child}
        v1, v2 = store.alias(f"{child}:v1"), store.alias(f"{child}:v2")
        assert v1 is not None and v2 is not None
        definitions = {
            alias.name: store.version(alias.routing[0]["stateMachineVersionArn"])
            for alias in (v1, v2)
        }
        assert "example.com/v1" in definitions["v1"].definition  # type: ignore[union-attr]
        assert "example.com/v2" in definitions["v2"].definition  # type: ignore[union-attr]
        assert parent.alias_arn == f"{parent.machine_arn}:v1"


def test_a_missing_pinned_version_is_a_clear_error(pg_conninfo: str, tmp_path: Path) -> None:
    (tmp_path / "enrich.yaml").write_text(CHILD.format(version=2))
    (tmp_path / "parent.yaml").write_text(PARENT)
    with psycopg.connect(pg_conninfo, autocommit=True) as conn, pytest.raises(WorkflowFileError):
        install(EngineStore(conn), Arns(), tmp_path / "parent.yaml")


def test_a_changed_definition_under_an_installed_version_is_refused(
    pg_conninfo: str, tmp_path: Path
) -> None:
    path = tmp_path / "enrich.yaml"
    path.write_text(CHILD.format(version=4))
    with psycopg.connect(pg_conninfo, autocommit=True) as conn:
        store = EngineStore(conn)
        first = install(store, Arns(), path)
        path.write_text("# a comment and new layout change nothing\n" + CHILD.format(version=4))
        assert install(store, Arns(), path).version_arn == first.version_arn
        path.write_text(CHILD.format(version=4).replace("example.com", "example.org"))
        with pytest.raises(WorkflowFileError) as refused:
            install(store, Arns(), path)
        message = str(refused.value)
        assert "enrich version 4 is already installed with a different definition" in message
        assert "bump `version` to 5" in message
        versions_before = store.versions(first.machine_arn)
        path.write_text(CHILD.format(version=5).replace("example.com", "example.org"))
        bumped = install(store, Arns(), path)
        assert bumped.version_arn != first.version_arn
        assert len(store.versions(first.machine_arn)) == len(versions_before) + 1
