"""Trigger `input` templates as Step Functions `Parameters`, so a start needs no function.

`{{ event.detail.id }}` is the JSONPath `$.detail.id` (keeping the value's JSON type, as the
template engine does for a lone expression); text around expressions becomes `States.Format`. A
template that needs more than paths (filters, tests, arithmetic, `run`) cannot be expressed without
code: it is refused at synth time, naming the trigger, rather than deployed wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV = Environment(autoescape=False)


class UnsupportedTemplateError(ValueError):
    pass


@dataclass
class TranslatedInput:
    parameters: dict[str, Any]
    """`Parameters` fragment producing the run's input."""
    paths: list[tuple[str | int, ...]] = field(default_factory=list)
    """Every path read, relative to the template root (`("detail", "id")`)."""


def _path(node: nodes.Node, root: str) -> tuple[str | int, ...]:
    if isinstance(node, nodes.Name):
        if node.name != root:
            raise UnsupportedTemplateError(f"'{node.name}' is not available here (only '{root}')")
        return ()
    if isinstance(node, nodes.Getattr):
        return (*_path(node.node, root), node.attr)
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
        key = node.arg.value
        if isinstance(key, str | int) and not isinstance(key, bool):
            return (*_path(node.node, root), key)
    raise UnsupportedTemplateError(f"'{type(node).__name__}' needs code; use a plain path")


def jsonpath(base: str, path: tuple[str | int, ...]) -> str:
    out = base
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}"
        else:
            out += "['" + part.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


def _format_literal(text: str) -> str:
    """Text inside a `States.Format` template string: `' { } \\` are escaped."""
    return re.sub(r"(['{}\\])", r"\\\1", text)


def _parts(text: str, root: str) -> list[str | tuple[str | int, ...]]:
    try:
        body = _ENV.parse(text).body
    except TemplateSyntaxError as exc:
        raise UnsupportedTemplateError(f"does not parse: {exc.message}") from None
    parts: list[str | tuple[str | int, ...]] = []
    for statement in body:
        if not isinstance(statement, nodes.Output):
            raise UnsupportedTemplateError(f"'{type(statement).__name__}' blocks need code")
        for node in statement.nodes:
            if isinstance(node, nodes.TemplateData):
                parts.append(node.data)
            else:
                parts.append(_path(node, root))
    return parts


def translate_input(templates: dict[str, Any], *, root: str, base: str) -> TranslatedInput:
    """`templates` over `root` (e.g. `event`), the root being at JSONPath `base` (e.g. `$`)."""
    result = TranslatedInput(parameters={})
    for key, template in templates.items():
        if not isinstance(template, str):
            result.parameters[key] = template
            continue
        try:
            parts = _parts(template, root)
        except UnsupportedTemplateError as exc:
            raise UnsupportedTemplateError(f"input.{key} = {template!r}: {exc}") from None
        paths = [p for p in parts if isinstance(p, tuple)]
        if len(paths) == 1 and all(isinstance(p, tuple) or not p.strip() for p in parts):
            parts = list[str | tuple[str | int, ...]](
                paths
            )  # a lone expression keeps its JSON type, as when rendered locally
        result.paths += paths
        if not paths:
            result.parameters[key] = template
        elif len(parts) == 1:
            result.parameters[f"{key}.$"] = jsonpath(base, paths[0])
        else:
            literal = "".join(_format_literal(p) if isinstance(p, str) else "{}" for p in parts)
            arguments = ", ".join(jsonpath(base, p) for p in paths)
            result.parameters[f"{key}.$"] = f"States.Format('{literal}', {arguments})"
    return result
