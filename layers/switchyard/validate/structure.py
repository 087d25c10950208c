"""Schema validation with pydantic, turned into located, actionable diagnostics.

When the schema fails, the parts that are valid are kept (a partial workflow) so that the graph
and reference checks still run and the author sees every problem in one pass.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from switchyard.diagnostics import Code, Diagnostic
from switchyard.model import Workflow
from switchyard.model import base as model_base
from switchyard.model.durations import BAD_DURATION
from switchyard.source import DocPath, LoadedDocument, format_path

_PATTERN_HINTS = {
    model_base.STEP_ID_PATTERN: "use lowercase letters, digits and _, starting with a letter "
    "(at most 64)",
    model_base.WORKFLOW_NAME_PATTERN: "use lowercase letters, digits and -, starting with a "
    "letter (at most 63)",
    model_base.TOOL_NAME_PATTERN: "use letters, digits, _ and -, starting with a letter "
    "(at most 64)",
    model_base.WORKFLOW_REF_PATTERN: "write name or name@version, e.g. summarize-doc@2",
}
_PLACEHOLDERS: dict[str, Any] = {"switchyard": 1, "name": "invalid", "version": 1}


@dataclass
class StructureResult:
    workflow: Workflow | None
    opaque_steps: dict[str, list[str]]
    """Steps that failed validation -> their `after` entries as far as they could be read."""
    diagnostics: list[Diagnostic]


def check_structure(document: LoadedDocument) -> StructureResult:
    data = document.data
    if not isinstance(data, dict):
        found = type(data).__name__ if data is not None else "nothing"
        problem = Diagnostic(
            Code.SCHEMA,
            "",
            f"a workflow file is a mapping of keys (switchyard, name, version, steps, ...), "
            f"found {found}",
            1,
            document.file,
        )
        return StructureResult(None, {}, [problem])
    try:
        return StructureResult(Workflow.model_validate(data), {}, [])
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    diagnostics = [_diagnostic(document, error) for error in errors]
    workflow, opaque = _partial_workflow(data, errors)
    return StructureResult(workflow, opaque, diagnostics)


def _partial_workflow(
    data: dict[str, Any], errors: list[ErrorDetails]
) -> tuple[Workflow | None, dict[str, list[str]]]:
    """The workflow without the parts that failed, so that later checks can still run.

    A bad optional key is dropped and its step kept; a step that still fails becomes opaque:
    it exists (references to it are fine) but its contents are not checked further.
    """
    partial = dict(data)
    raw_steps = partial.get("steps")
    steps = (
        {k: dict(v) if isinstance(v, dict) else v for k, v in raw_steps.items()}
        if isinstance(raw_steps, dict)
        else {}
    )
    partial["steps"] = steps
    opaque: dict[str, list[str]] = {}
    for _ in range(4):
        for error in errors:
            _drop(partial, steps, opaque, tuple(error["loc"]))
        if not steps:
            return None, opaque
        for key, value in _PLACEHOLDERS.items():
            partial.setdefault(key, value)
        try:
            return Workflow.model_validate(partial), opaque
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
    return None, opaque


def _drop(
    partial: dict[str, Any],
    steps: dict[str, Any],
    opaque: dict[str, list[str]],
    loc: tuple[Any, ...],
) -> None:
    path, _ = _resolve_loc(partial, loc)
    if not path:
        return
    top = path[0]
    if top != "steps":
        if top in _PLACEHOLDERS:
            partial[str(top)] = _PLACEHOLDERS[str(top)]
        else:
            partial.pop(str(top), None)
        return
    if len(path) < 2 or not isinstance(path[1], str) or path[1] not in steps:
        if len(loc) > 1 and isinstance(loc[1], str) and loc[1] in steps:
            path = ("steps", loc[1])  # e.g. an invalid step id
        else:
            return
    step_id = str(path[1])
    step = steps[step_id]
    if len(path) >= 3 and isinstance(step, dict) and path[2] not in ("type", "strategy"):
        step.pop(path[2], None)
        return
    if isinstance(step, dict):
        after = step.get("after")
        opaque[step_id] = (
            [d for d in after if isinstance(d, str)] if isinstance(after, list) else []
        )
    else:
        opaque[step_id] = []
    del steps[step_id]


def _diagnostic(document: LoadedDocument, error: ErrorDetails) -> Diagnostic:
    path, leftover = _resolve_loc(document.data, tuple(error["loc"]))
    kind = error["type"]
    code = Code.BAD_DURATION if kind == BAD_DURATION else Code.SCHEMA
    message = _message(error, leftover)
    # A missing key is reported at the mapping that lacks it.
    where = path if kind == "missing" else path + leftover
    return Diagnostic(code, format_path(where), message, document.line_of(where), document.file)


def _resolve_loc(data: Any, loc: tuple[Any, ...]) -> tuple[DocPath, DocPath]:
    """Split pydantic's loc into the path that exists in the data and what is left.

    pydantic adds union tags (`agent`, `rule`) and `[key]` markers to locations; they are not
    keys of the document, so a step lands on `steps.draft.after[1]`, not `steps.draft.agent...`.
    """
    best: tuple[DocPath, DocPath] = ((), tuple(p for p in loc if p != "[key]"))

    def walk(node: Any, rest: tuple[Any, ...], taken: DocPath) -> bool:
        nonlocal best
        if not rest:
            best = (taken, ())
            return True
        head, tail = rest[0], rest[1:]
        if head == "[key]":
            best = (taken, ())
            return True
        in_dict = isinstance(node, dict) and isinstance(head, str) and head in node
        in_list = isinstance(node, list) and isinstance(head, int) and 0 <= head < len(node)
        if (in_dict or in_list) and walk(node[head], tail, (*taken, head)):
            return True
        is_container = isinstance(node, dict | list)
        if is_container and isinstance(head, str) and walk(node, tail, taken):  # a union tag
            return True
        if len(taken) >= len(best[0]):
            best = (taken, tuple(p for p in rest if p != "[key]"))
        return False

    walk(data, loc, ())
    return best


def _message(error: ErrorDetails, leftover: DocPath) -> str:
    kind = error["type"]
    ctx = error.get("ctx", {})
    loc = error["loc"]
    if kind == "missing":
        name = leftover[-1] if leftover else loc[-1]
        return f"missing required key '{name}'; add it"
    if kind == "extra_forbidden":
        name = str(loc[-1])
        close = difflib.get_close_matches(name, _known_keys(), n=1, cutoff=0.75)
        hint = f"; did you mean '{close[0]}'?" if close else "; remove it or check its spelling"
        return f"unknown key '{name}'{hint}"
    if kind == "union_tag_invalid":
        expected = str(ctx.get("expected_tags", "")).replace("'", "")
        field = ctx.get("discriminator", "type").strip("'")
        return f"unknown {field} '{ctx.get('tag')}'; use one of: {expected}"
    if kind == "union_tag_not_found":
        field = str(ctx.get("discriminator", "type")).strip("'")
        return f"missing required key '{field}'; add it"
    if kind == "literal_error":
        return f"{_shown(error['input'])} is not allowed here; use one of: {ctx.get('expected')}"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        hint = _PATTERN_HINTS.get(pattern, f"it must match {pattern}")
        what = "id" if "[key]" in loc else "value"
        return f"{what} {_shown(error['input'])} is not valid: {hint}"
    if kind == BAD_DURATION:
        return error["msg"]
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping of keys here, found {_shown(error['input'])}"
    if kind in ("less_than_equal", "greater_than_equal", "greater_than", "less_than"):
        bound = {
            "less_than_equal": ("at most", "le"),
            "greater_than_equal": ("at least", "ge"),
            "greater_than": ("more than", "gt"),
            "less_than": ("less than", "lt"),
        }[kind]
        return f"must be {bound[0]} {ctx.get(bound[1])} (found {_shown(error['input'])})"
    if kind in ("too_short", "too_long"):
        return f"{error['msg'][:1].lower()}{error['msg'][1:]}"
    if kind == "list_type":
        return f"expected a list here, found {_shown(error['input'])}"
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return f"{message[:1].lower()}{message[1:]} (found {_shown(error['input'])})"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_KNOWN_KEYS: list[str] = []


def _known_keys() -> list[str]:
    """Every key the format knows, for 'did you mean' hints."""
    if not _KNOWN_KEYS:
        seen: set[str] = set()
        pending: list[type[BaseModel]] = [Workflow]
        while pending:
            model = pending.pop()
            for name, info in model.model_fields.items():
                seen.add(name)
                pending.extend(_models_in(info.annotation, seen))
        _KNOWN_KEYS.extend(sorted(k for k in seen if not k.startswith("model:")))
    return _KNOWN_KEYS


def _models_in(annotation: Any, seen: set[str]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        marker = f"model:{annotation.__qualname__}"
        if marker not in seen:
            seen.add(marker)
            found.append(annotation)
        return found
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_models_in(arg, seen))
    for meta in getattr(annotation, "__metadata__", ()) or ():
        found.extend(_models_in(meta, seen))
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and origin is not annotation:
        found.extend(_models_in(origin, seen))
    return found
