"""The workflows beside a file, so that `sub_workflow: name@version` can be checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from switchyard.source import load_file

WORKFLOW_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class WorkflowCatalog:
    """Workflow name -> version -> declared inputs (JSON Schemas by input name)."""

    versions: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)

    def add(self, name: str, version: int, inputs: dict[str, Any]) -> None:
        self.versions.setdefault(name, {})[version] = inputs

    def inputs_of(self, name: str, version: int | None) -> dict[str, Any] | None:
        """The inputs of `name@version` (newest when version is None); None when not found."""
        known = self.versions.get(name)
        if not known:
            return None
        if version is None:
            return known[max(known)]
        return known.get(version)

    def describe(self, name: str) -> str:
        known = self.versions.get(name)
        if not known:
            known_names = sorted(self.versions)
            names = ", ".join(known_names[:8]) or "none"
            if len(known_names) > 8:
                names += f", and {len(known_names) - 8} more"
            return f"no workflow named '{name}' beside this file (found: {names})"
        versions = ", ".join(str(v) for v in sorted(known))
        return f"workflow '{name}' has no such version (found: {versions})"

    @classmethod
    def of_directory(cls, directory: Path) -> WorkflowCatalog:
        """Read the name, version and inputs of every workflow file in `directory`."""
        catalog = cls()
        for path in sorted(directory.iterdir()):
            if path.suffix not in WORKFLOW_SUFFIXES or not path.is_file():
                continue
            data = load_file(path).data
            if not isinstance(data, dict):
                continue
            name, version = data.get("name"), data.get("version")
            inputs = data.get("inputs")
            if isinstance(name, str) and isinstance(version, int) and not isinstance(version, bool):
                catalog.add(name, version, inputs if isinstance(inputs, dict) else {})
        return catalog
