"""Validation: every problem of a workflow file in one pass, located by line and path."""

from switchyard.validate.catalog import WorkflowCatalog
from switchyard.validate.validator import (
    ValidationResult,
    validate_document,
    validate_file,
    validate_text,
)

__all__ = [
    "ValidationResult",
    "WorkflowCatalog",
    "validate_document",
    "validate_file",
    "validate_text",
]
