"""Shared pieces of the workflow model: the base class, identifiers, error types."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, WithJsonSchema

STEP_ID_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
WORKFLOW_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"
TOOL_NAME_PATTERN = r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$"
WORKFLOW_REF_PATTERN = r"^[a-z][a-z0-9-]{0,62}(@[1-9][0-9]*)?$"
INPUT_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
"""An input is read as `inputs.<name>` in templates and conditions, so its name is an identifier."""

Priority = Literal["high", "normal", "low"]
"""Who gets a provider's capacity and the local engine's workers first (docs/operations.md)."""
PRIORITIES: tuple[Priority, ...] = ("high", "normal", "low")
"""Highest first."""

StepId = Annotated[str, StringConstraints(pattern=STEP_ID_PATTERN)]
WorkflowName = Annotated[str, StringConstraints(pattern=WORKFLOW_NAME_PATTERN)]
ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)]
InputName = Annotated[str, StringConstraints(pattern=INPUT_NAME_PATTERN)]

Template = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "description": "Template: text with {{ expression }} parts over inputs, steps, run, "
            "... (Jinja2 sandbox).",
        }
    ),
]
"""A string with `{{ expression }}` parts, rendered with Jinja2's sandbox."""

ConditionText = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "description": 'Condition, e.g. steps.classify.output.label == "billing" and '
            'inputs.tier in ["pro", "enterprise"]',
        }
    ),
]
"""An expression of the condition language (docs/workflow-format.md)."""


class Spec(BaseModel):
    """Base of every model in a workflow file: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ErrorType(StrEnum):
    """What went wrong in a step; retry policies and `Catch` rules match on these."""

    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    TRANSIENT = "transient"
    INVALID_OUTPUT = "invalid_output"
    TEMPLATE = "template"
    REJECTED = "rejected"
    BUDGET = "budget"
    POLICY = "policy"
    PERMANENT = "permanent"


class SideEffect(StrEnum):
    NONE = "none"
    IDEMPOTENT = "idempotent"
    NON_IDEMPOTENT = "non_idempotent"


class OnError(StrEnum):
    FAIL = "fail"
    CONTINUE = "continue"
    PAUSE = "pause"
