"""Validate a workflow file: every problem, in one pass, each with its line and path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from switchyard.diagnostics import Diagnostic, sort_key
from switchyard.model import Workflow
from switchyard.source import LoadedDocument, load_document, load_file
from switchyard.validate.catalog import WorkflowCatalog
from switchyard.validate.context import Checks
from switchyard.validate.continue_as_new import check_continue_as_new
from switchyard.validate.dag_rules import (
    check_cycles_and_reachability,
    check_dependencies,
    check_fallbacks,
    check_routers,
)
from switchyard.validate.graph import Upstream
from switchyard.validate.payload_size import check_payload_size
from switchyard.validate.references import ReferenceChecker
from switchyard.validate.step_rules import StepRules
from switchyard.validate.structure import check_structure
from switchyard.validate.timeouts import check_gate_timeouts


@dataclass
class ValidationResult:
    file: str
    workflow: Workflow | None
    """The workflow when there are no errors (warnings allowed), else None."""
    diagnostics: list[Diagnostic]

    @property
    def ok(self) -> bool:
        return self.workflow is not None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


def validate_file(path: str | Path, *, catalog: WorkflowCatalog | None = None) -> ValidationResult:
    """Load and validate one file; sub-workflows are looked up among the files beside it."""
    path = Path(path)
    document = load_file(path)
    if catalog is None and path.parent.is_dir():
        catalog = WorkflowCatalog.of_directory(path.parent)
    return validate_document(document, catalog=catalog)


def validate_text(
    text: str, *, file: str = "<input>", catalog: WorkflowCatalog | None = None
) -> ValidationResult:
    return validate_document(load_document(text, file=file), catalog=catalog)


def validate_document(
    document: LoadedDocument, *, catalog: WorkflowCatalog | None = None
) -> ValidationResult:
    diagnostics = list(document.diagnostics)
    if document.data is None:
        return ValidationResult(document.file, None, diagnostics)
    structure = check_structure(document)
    diagnostics += structure.diagnostics
    workflow = structure.workflow
    if workflow is not None:
        checks = Checks(document, workflow, structure.opaque_steps)
        check_dependencies(checks)
        check_cycles_and_reachability(checks)
        check_fallbacks(checks)
        check_routers(checks)
        check_gate_timeouts(checks)
        check_payload_size(checks)
        upstream = _upstream(checks)
        check_continue_as_new(checks, upstream)
        StepRules(checks, ReferenceChecker(checks, upstream), catalog).run()
        diagnostics += checks.diagnostics
    diagnostics = sorted(dict.fromkeys(diagnostics), key=sort_key)
    has_errors = any(d.is_error for d in diagnostics)
    return ValidationResult(document.file, None if has_errors else workflow, diagnostics)


def _upstream(checks: Checks) -> Upstream:
    after = {step_id: list(step.after) for step_id, step in checks.workflow.steps.items()}
    after.update(checks.opaque_steps)
    return Upstream(after)
