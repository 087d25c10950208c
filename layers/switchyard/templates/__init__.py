"""Templates: `{{ expression }}` strings rendered with Jinja2's sandbox."""

from switchyard.templates.environment import template_environment
from switchyard.templates.references import (
    Reference,
    TemplateError,
    TemplateInfo,
    has_template_syntax,
    template_info,
)

__all__ = [
    "Reference",
    "TemplateError",
    "TemplateInfo",
    "has_template_syntax",
    "template_environment",
    "template_info",
]
