"""The workflows the API starts runs of: every valid workflow file of one directory, installed
into the engine when the server starts (compiled, its state machine created or updated, a version
published). A file that does not validate is reported with its diagnostics and skipped; it never
stops the server."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from switchyard.engine.arns import Arns
from switchyard.engine.store import EngineStore
from switchyard.local.workflows import Installed, install
from switchyard.validate.catalog import WORKFLOW_SUFFIXES

Report = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class CatalogEntry:
    installed: Installed
    path: Path

    @property
    def name(self) -> str:
        return self.installed.workflow.name

    @property
    def version(self) -> int:
        return self.installed.workflow.version

    def describe(self) -> dict[str, Any]:
        workflow = self.installed.workflow
        return {
            "name": workflow.name,
            "version": workflow.version,
            "description": workflow.description,
            "inputs": workflow.inputs,
            "file": self.path.name,
            "links": {"runs": f"/workflows/{workflow.name}/runs"},
        }


class WorkflowCatalog:
    def __init__(self, entries: Iterable[CatalogEntry] = ()) -> None:
        self._entries: dict[tuple[str, int], CatalogEntry] = {}
        for entry in entries:
            self._entries.setdefault((entry.name, entry.version), entry)

    def add(self, entry: CatalogEntry) -> None:
        """A workflow installed while the server runs (the builder's install button)."""
        self._entries[(entry.name, entry.version)] = entry

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[CatalogEntry]:
        return sorted(self._entries.values(), key=lambda e: (e.name, e.version))

    def names(self) -> list[str]:
        return sorted({name for name, _ in self._entries})

    def find(self, name: str, version: int | None = None) -> CatalogEntry | None:
        """The workflow's given version, else its latest."""
        if version is not None:
            return self._entries.get((name, version))
        versions = [entry for (n, _), entry in self._entries.items() if n == name]
        return max(versions, key=lambda e: e.version) if versions else None


def install_directory(
    store: EngineStore, arns: Arns, directory: Path, *, report: Report = _stderr
) -> WorkflowCatalog:
    """Install every workflow file of `directory` (not its subfolders: scripts and inputs live
    there); a file that cannot be installed is reported and skipped."""
    entries: list[CatalogEntry] = []
    seen: dict[tuple[str, int], Path] = {}
    for path in sorted(p for p in directory.iterdir() if p.suffix in WORKFLOW_SUFFIXES):
        if not path.is_file():
            continue
        try:
            installed = install(store, arns, path)
        except Exception as exc:  # a bad file is skipped, whatever is wrong with it
            report(f"switchyard: skipped {path}: {exc}")
            continue
        key = (installed.workflow.name, installed.workflow.version)
        if key in seen:
            report(f"switchyard: skipped {path}: {key[0]} v{key[1]} is also {seen[key]}")
            continue
        seen[key] = path
        entries.append(CatalogEntry(installed, path))
    return WorkflowCatalog(entries)
