"""Templates rendered against a step's context, and the `joined` value of a step's `after`.

A string that is exactly one `{{ expression }}` keeps the expression's native type, so
`items: "{{ steps.split.output.parts }}"` is a list, not its text; any other string renders to
text (objects and lists inside text render as JSON, which is what a prompt wants). Undefined names
are errors of type `template`, never empty strings: a typo must not silently send an empty prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import TemplateError as JinjaTemplateError
from jinja2 import Undefined, UndefinedError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from switchyard.contract import StepContext, StepStatus
from switchyard.contract.step_errors import TemplateRenderError
from switchyard.templates import TemplateError, template_environment, template_info

Resolver = Callable[[Any], Any]
"""Replaces large-output references with their values (see large_outputs.resolve)."""


def _finalize(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


@lru_cache(maxsize=1)
def _text_environment() -> ImmutableSandboxedEnvironment:
    """The shared sandbox, but objects inside text render as JSON rather than Python reprs."""
    env = template_environment().overlay(finalize=_finalize)
    assert isinstance(env, ImmutableSandboxedEnvironment)
    return env


def render(value: Any, context: Mapping[str, Any]) -> Any:
    """Render a template value: a string, or a dict/list nesting strings (others pass through)."""
    if isinstance(value, str):
        return render_string(value, context)
    if isinstance(value, dict):
        return {key: render(item, context) for key, item in value.items()}
    if isinstance(value, list):
        return [render(item, context) for item in value]
    return value


def render_text(template: Any, context: Mapping[str, Any]) -> str:
    """A template rendered for a reader (a model's prompt, a person's message): always text.

    A lone `{{ expression }}` keeps its type in `render`; here a value that is not a string is
    written as JSON, as objects inside text are (`{"k": "é", "b": true}`, never Python's
    `{'k': 'é', 'b': True}`), and `null` stays `null`."""
    value = render(template, context)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def render_string(text: str, context: Mapping[str, Any]) -> Any:
    """One template string: native value for a lone `{{ expression }}`, else text."""
    try:
        info = template_info(text)
    except TemplateError as exc:
        raise TemplateRenderError(
            f"template does not parse: {exc.message}", template=text
        ) from None
    if info.is_static:
        return text
    try:
        if info.single_expression:
            inner = text.strip()[2:-2]
            expression = _text_environment().compile_expression(inner, undefined_to_none=False)
            result = expression(**context)
            if isinstance(result, Undefined):
                result._fail_with_undefined_error()
            return result
        return _text_environment().from_string(text).render(**context)
    except UndefinedError as exc:
        raise TemplateRenderError(f"{exc.message} in template {text!r}", template=text) from None
    except SecurityError as exc:
        raise TemplateRenderError(f"unsafe template {text!r}: {exc}", template=text) from None
    except JinjaTemplateError as exc:
        raise TemplateRenderError(f"template {text!r} failed: {exc}", template=text) from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as exc:
        raise TemplateRenderError(f"template {text!r} failed: {exc}", template=text) from None


def _contributes(record: Any) -> bool:
    """Whether a dependency's output counts in `joined`.

    Completed steps count, and so do failed steps whose fallback stood in (their `output` is the
    fallback's). Skipped steps and failed steps without a fallback (`on_error: continue`, which
    dependents treat as skipped) are left out.
    """
    if not isinstance(record, Mapping):
        return False
    status = record.get("status")
    if status == StepStatus.COMPLETED:
        return True
    return status == StepStatus.FAILED and record.get("fallback") is not None and "output" in record


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def joined(after: Sequence[str], records: Mapping[str, Any], merge: str = "by_step") -> Any:
    """The merged outputs of `after` per the step's `merge` strategy.

    `by_step` → `{dep: output}`; `deep_merge` → objects merged in `after` order, later wins
    (outputs that are not objects are left out); `list` → outputs in `after` order; `first` → the
    first contributing output, or null.
    """
    outputs = [(dep, records[dep].get("output")) for dep in after if _contributes(records.get(dep))]
    if merge == "by_step":
        return dict(outputs)
    if merge == "deep_merge":
        merged: dict[str, Any] = {}
        for _, output in outputs:
            if isinstance(output, Mapping):
                merged = _deep_merge(merged, output)
        return merged
    if merge == "list":
        return [output for _, output in outputs]
    if merge == "first":
        return outputs[0][1] if outputs else None
    raise ValueError(f"unknown merge strategy {merge!r}")


def template_context(
    context: StepContext,
    *,
    after: Sequence[str] = (),
    merge: str = "by_step",
    step_input: Mapping[str, Any] | None = None,
    resolver: Resolver | None = None,
) -> dict[str, Any]:
    """What templates of a step see: inputs, steps, run, scope names, `joined` and `input`.

    `step_input` is the step's `input` map of templates, rendered here against the rest of the
    context. `resolver` replaces large-output references so templates read the real values.
    """
    steps: Any = context.steps
    if resolver is not None:
        steps = resolver(steps)
    out: dict[str, Any] = {
        "inputs": resolver(context.inputs) if resolver is not None else context.inputs,
        "steps": steps,
        "run": context.run.model_dump(mode="json", exclude_none=True),
    }
    scope = dict(context.scope or {})
    if resolver is not None:
        scope = resolver(scope)
    for name in ("item", "index", "iteration", "previous"):
        if name in scope:
            out[name] = scope[name]
    if "iteration" in scope and "previous" not in scope:
        out["previous"] = None
    if after:
        out["joined"] = joined(after, steps, merge)
    if step_input:
        out["input"] = render(dict(step_input), out)
    return out
