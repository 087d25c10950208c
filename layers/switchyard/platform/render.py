"""render: templates that JSONPath cannot express (sub-workflow inputs, map items, outputs),
rendered against a step's context; a template error leaves as `template`.

A request that names a `helper` runs one of the machine's other helpers instead (a failed step's
error, a deadline, an output check: `switchyard.platform.helpers`)."""

from __future__ import annotations

from typing import Any

from switchyard.contract import RenderRequest, RenderResult, StepErrorName
from switchyard.contract.errors import lambda_error
from switchyard.contract.helpers import DeadlineRequest, FailureRequest, OutputCheckRequest
from switchyard.contract.payloads import Wire
from switchyard.platform import helpers
from switchyard.runtime.errors import StepError, TemplateRenderError
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
    helper = event.get("helper")
    if helper is not None:
        return _helper(str(helper), event)
    request = RenderRequest.model_validate(event)
    try:
        result = render_request(request)
    except TemplateRenderError as exc:
        raise lambda_error(StepErrorName.TEMPLATE, str(exc)) from None
    return result.model_dump(mode="json")


def _helper(name: str, event: dict[str, Any]) -> dict[str, Any]:
    result: Wire
    if name == "failure":
        result = helpers.failure(FailureRequest.model_validate(event))
    elif name == "deadline":
        result = helpers.deadline(DeadlineRequest.model_validate(event))
    elif name == "check_output":
        try:
            result = helpers.check_output(OutputCheckRequest.model_validate(event))
        except StepError as error:
            raise error.as_lambda_exception() from None
    else:
        raise lambda_error(StepErrorName.PERMANENT, f"render has no helper {name!r}")
    return result.model_dump(mode="json")
