"""What every check shares: the document, the (possibly partial) workflow, the report."""

from __future__ import annotations

from dataclasses import dataclass, field

from switchyard.diagnostics import Code, Diagnostic, Severity
from switchyard.model import Workflow
from switchyard.source import DocPath, LoadedDocument, format_path


@dataclass
class Checks:
    """Collects diagnostics for one document, each located by its document path."""

    document: LoadedDocument
    workflow: Workflow
    opaque_steps: dict[str, list[str]] = field(default_factory=dict)
    """Steps that failed schema validation -> their `after`: they exist, contents unknown."""
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def report(
        self,
        code: Code,
        path: DocPath,
        message: str,
        *,
        severity: Severity = Severity.ERROR,
    ) -> None:
        self.diagnostics.append(
            Diagnostic(
                code,
                format_path(path),
                message,
                self.document.line_of(path),
                self.document.file,
                severity,
            )
        )

    def step_exists(self, step_id: str) -> bool:
        return step_id in self.workflow.steps or step_id in self.opaque_steps
