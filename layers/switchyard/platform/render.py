"""render: templates that JSONPath cannot express (sub-workflow inputs, map items, outputs),
rendered against a step's context; a template error leaves as `template`."""

from __future__ import annotations

from typing import Any

from switchyard.contract import RenderRequest, RenderResult, StepErrorName
from switchyard.contract.errors import lambda_error
from switchyard.runtime.errors import TemplateRenderError
from switchyard.runtime.rendering import render, template_context


def render_request(request: RenderRequest) -> RenderResult:
    context = template_context(
        request.context, after=request.after, merge=request.merge or "by_step"
    )
    value = render(request.templates, context)
    extra = getattr(request, "extra", None)
    if isinstance(extra, dict) and isinstance(value, dict):
        value = {**value, **extra}
    return RenderResult(value=value)


def handle(event: dict[str, Any]) -> dict[str, Any]:
    request = RenderRequest.model_validate(event)
    try:
        result = render_request(request)
    except TemplateRenderError as exc:
        raise lambda_error(StepErrorName.TEMPLATE, str(exc)) from None
    return result.model_dump(mode="json")
