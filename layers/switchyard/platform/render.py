"""render: templates that JSONPath cannot express (sub-workflow inputs, map items, outputs),
rendered against a step's context; a template error leaves as `template`. The run's `outputs`
(in a parent's state: a sub-workflow's result) pass through the large-output offload.

Large outputs in the context are read back first, as the step functions do, so templates see the
values, not the references. Only then does render reach a store (S3 or the run database, from
`runtime.wiring.output_stores`); otherwise it is pure.

A request that names a `helper` runs one of the machine's other helpers instead (a failed step's
error, a deadline, an output check: `switchyard.platform.helpers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from switchyard.contract import (
    LARGE_OUTPUT_BYTES,
    RenderRequest,
    RenderResult,
    RunContext,
    StepErrorName,
)
from switchyard.contract.errors import lambda_error
from switchyard.contract.helpers import (
    CaughtRequest,
    DeadlineRequest,
    FailureRequest,
    OutputCheckRequest,
)
from switchyard.contract.payloads import Wire
from switchyard.contract.step_errors import PermanentError, StepError, TemplateRenderError
from switchyard.platform import helpers
from switchyard.runtime.large_outputs import (
    OutputNotFoundError,
    OutputStore,
    PostgresOutputStore,
    S3OutputStore,
    json_size,
    lazy_resolver,
    offload,
)
from switchyard.runtime.rendering import Resolver, render, template_context


def render_request(request: RenderRequest, *, resolver: Resolver | None = None) -> RenderResult:
    """The rendered templates; `resolver` reads large outputs of the context back. A template
    that fails names where it is (`outputs.summary`, `steps.summarize.input.text`)."""
    context = template_context(
        request.context,
        after=request.after,
        merge=request.merge or "by_step",
        resolver=resolver,
    )
    value = _render_at(request.templates, context, _location(request))
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
        result = render_request(request, resolver=lazy_resolver(_output_stores))
    except TemplateRenderError as error:
        # The cause is JSON like every step function's ({type, message, location}), so that
        # readers of a Cause (contract.errors.read_cause) find the plain message.
        raise error.as_lambda_exception() from None
    except OutputNotFoundError as exc:
        failure = PermanentError(
            f"{_location(request)}: a large output could not be read: {exc.args[0]}"
        )
        raise failure.as_lambda_exception() from None
    if request.step_id is None:  # the run's outputs: in a parent's state, a sub-workflow's result
        result = RenderResult(value=bounded_outputs(result.value, request.context.run))
    return result.model_dump(mode="json")


def bounded_outputs(value: Any, run: RunContext) -> Any:
    """The run's outputs with their largest parts moved to the output store until they fit the
    run's `output_limit` (a sub-workflow's share of its parent's state; else
    `LARGE_OUTPUT_BYTES`), as a step's output is. Without a store they stay as they are."""
    limit = run.output_limit or LARGE_OUTPUT_BYTES
    if json_size(value) <= limit:
        return value
    stores = _output_stores()
    store = stores.get(S3OutputStore.name) or stores.get(PostgresOutputStore.name)
    if store is None:
        return value
    return offload(value, store, f"{run.id}/outputs", limit=limit)


def _location(request: RenderRequest) -> str:
    """Where the templates are: the workflow's `outputs`, else a step's `input` (a map of
    templates: a sub-workflow's) or `items` (one template: a map's)."""
    if request.step_id is None:
        return "outputs"
    field = "input" if isinstance(request.templates, dict) else "items"
    return f"steps.{request.step_id}.{field}"


def _render_at(templates: Any, context: Mapping[str, Any], where: str) -> Any:
    """`render`, with a failing template's location in its error."""
    if isinstance(templates, dict):
        return {key: _render_at(item, context, f"{where}.{key}") for key, item in templates.items()}
    if isinstance(templates, list):
        return [_render_at(item, context, f"{where}[{n}]") for n, item in enumerate(templates)]
    try:
        return render(templates, context)
    except TemplateRenderError as error:
        raise TemplateRenderError(
            f"{where}: {error.message}", template=error.template, location=where
        ) from None


def _output_stores() -> Mapping[str, OutputStore]:
    """The process's stores, imported only when a context holds a reference: the wiring (and the
    step runtime behind it) is not loaded by a render that needs no store."""
    from switchyard.runtime.wiring import output_stores

    return output_stores()


def _helper(name: str, event: dict[str, Any]) -> dict[str, Any]:
    result: Wire
    if name == "failure":
        result = helpers.failure(FailureRequest.model_validate(event))
    elif name == "caught":
        return helpers.caught(CaughtRequest.model_validate(event))
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
