"""Templates that JSONPath can express without a function call, and a render Task for the rest.

`{{ inputs.documents }}` is `$.inputs.documents`: no need to call a function. Anything richer
(filters, text around the expression, fields of a step's output that may be missing) is rendered by
the render function, which reports a clear template error instead of failing the Choice or the
payload with a missing path.
"""

from __future__ import annotations

import re
from typing import Any

from switchyard.compile.steps.unit import LAMBDA_INVOKE, LAMBDA_SERVICE_RETRY, function
from switchyard.contract import FunctionName
from switchyard.model import Workflow
from switchyard.templates import has_template_syntax, template_info

_BARE_PATH = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}$")
_SCOPE_ROOTS = {
    "item": "$.scope.item",
    "index": "$.scope.index",
    "iteration": "$.scope.iteration",
    "previous": "$.scope.previous",
}


def as_jsonpath(text: str, workflow: Workflow) -> str | None:
    """The JSONPath equal to a template that is one bare path sure to exist, else None."""
    match = _BARE_PATH.match(text.strip())
    if match is None:
        return None
    parts = match.group(1).split(".")
    root, rest = parts[0], parts[1:]
    if root in _SCOPE_ROOTS and not rest:
        return _SCOPE_ROOTS[root]
    if root == "run" and len(rest) <= 1:
        return ".".join(["$.run", *rest])
    if root == "inputs":
        if not rest:
            return "$.inputs"
        # run_start requires every input without a default and fills the defaults.
        if len(rest) == 1 and rest[0] in workflow.inputs:
            return f"$.inputs.{rest[0]}"
        return None
    if root == "steps" and len(rest) == 2 and rest[1] == "output" and rest[0] in workflow.steps:
        return f"$.steps.{rest[0]}.output"
    return None


def parameters_for(value: Any, workflow: Workflow) -> tuple[bool, Any]:
    """(True, Parameters fragment) when every template in `value` is expressible in JSONPath."""
    if isinstance(value, str):
        if not has_template_syntax(value):
            return True, value
        path = as_jsonpath(value, workflow)
        return (path is not None), path
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(item, str) and has_template_syntax(item):
                path = as_jsonpath(item, workflow)
                if path is None:
                    return False, None
                out[f"{key}.$"] = path
                continue
            ok, converted = parameters_for(item, workflow)
            if not ok:
                return False, None
            out[key] = converted
        return True, out
    if isinstance(value, list):
        if any(_has_templates(item) for item in value):
            return False, None
        return True, value
    return True, value


def _has_templates(value: Any) -> bool:
    if isinstance(value, str):
        return has_template_syntax(value)
    if isinstance(value, dict):
        return any(_has_templates(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_templates(v) for v in value)
    return False


def render_task(
    templates: Any,
    context: dict[str, Any],
    *,
    step_id: str | None,
    result_path: str,
    extra: dict[str, Any] | None = None,
    after: list[str] | None = None,
    merge: str = "by_step",
) -> dict[str, Any]:
    """A Task that renders `templates` with the render function into `result_path`; `after`
    and `merge` give the templates their `joined`."""
    payload: dict[str, Any] = {"templates": templates, "context": context}
    if step_id is not None:
        payload["step_id"] = step_id
    if after:
        payload["after"] = after
        payload["merge"] = merge
    if extra:
        payload["extra"] = extra
    return {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {"FunctionName": function(FunctionName.RENDER), "Payload": payload},
        "ResultSelector": {"value.$": "$.Payload.value"},
        "ResultPath": result_path,
        "Retry": [LAMBDA_SERVICE_RETRY],
    }


def is_single_expression(text: str) -> bool:
    return template_info(text).single_expression
