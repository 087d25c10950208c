"""What a template reads: the context paths in its `{{ expression }}` parts.

Jinja2's parser costs about 100 µs a template, too slow for a 1,000-step workflow checked on
every save. Most templates are plain paths with filters (`{{ steps.a.output.text | default("") }}`);
a small scanner reads those, and anything richer goes to Jinja2's own parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from jinja2 import TemplateSyntaxError, nodes
from jinja2.meta import find_undeclared_variables

from switchyard.templates.environment import template_environment

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PATH = rf"{_NAME}(?:\.{_NAME}|\[\d+\]|\[\"[^\"\\]*\"\]|\['[^'\\]*'\])*"
_LITERAL = r"\"[^\"\\]*\"|'[^'\\]*'|-?\d+(?:\.\d+)?|true|false|none|True|False|None"
_ARG = rf"(?:{_LITERAL}|{_PATH})"
_FILTER = rf"\|\s*(?P<fname>{_NAME})(?:\s*\(\s*(?:{_ARG}(?:\s*,\s*{_ARG})*)?\s*\))?"
_EXPR = re.compile(rf"^\s*{_ARG}(?:\s*{_FILTER})*\s*$")
_TOKENS = re.compile(
    rf"(?P<string>\"[^\"\\]*\"|'[^'\\]*')|\|\s*(?P<filter>{_NAME})|(?P<path>{_PATH})|(?P<other>.)",
    re.DOTALL,
)
_SEGMENT = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_PART = re.compile(rf"\.({_NAME})|\[(\d+)\]|\[\"([^\"\\]*)\"\]|\['([^'\\]*)'\]")
_CONSTANTS = {"true", "false", "none", "True", "False", "None"}


class TemplateError(ValueError):
    """A template that does not parse, or uses a filter that does not exist."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True, slots=True)
class Reference:
    """One path a template reads: `steps.draft.output.text` is root `steps` and three parts."""

    root: str
    parts: tuple[str | int, ...]

    @property
    def text(self) -> str:
        return self.root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.parts)


@dataclass(frozen=True, slots=True)
class TemplateInfo:
    references: tuple[Reference, ...]
    single_expression: bool
    """True when the whole string is one `{{ expression }}`, which keeps its value's type."""
    is_static: bool
    """True when the string has no template syntax at all."""


def has_template_syntax(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


@lru_cache(maxsize=8192)
def template_info(text: str) -> TemplateInfo:
    """References and shape of a template; raises TemplateError when it does not parse."""
    if not has_template_syntax(text):
        return TemplateInfo((), False, True)
    single = _is_single_expression(text)
    fast = _scan(text)
    if fast is not None:
        return TemplateInfo(fast, single, False)
    return TemplateInfo(_parse_with_jinja(text), single, False)


def _is_single_expression(text: str) -> bool:
    stripped = text.strip()
    if not (stripped.startswith("{{") and stripped.endswith("}}")):
        return False
    inner = stripped[2:-2]
    return "{{" not in inner and "}}" not in inner and "{%" not in inner


def _scan(text: str) -> tuple[Reference, ...] | None:
    """References of a template made only of `{{ path | filter(args) }}` parts, else None."""
    if "{%" in text or "{#" in text:
        return None
    refs: list[Reference] = []
    filters = template_environment().filters
    last = 0
    for match in _SEGMENT.finditer(text):
        if "{{" in text[last : match.start()] or "}}" in text[last : match.start()]:
            return None
        last = match.end()
        expr = match.group(1)
        if not _EXPR.match(expr):
            return None
        for token in _TOKENS.finditer(expr):
            kind = token.lastgroup
            if kind == "filter" and token.group("filter") not in filters:
                raise TemplateError(f"no filter named '{token.group('filter')}'")
            if kind == "path" and token.group() not in _CONSTANTS:
                refs.append(_reference_from_text(token.group()))
    tail = text[last:]
    if "{{" in tail or "}}" in tail:
        return None
    return tuple(refs)


def _reference_from_text(path: str) -> Reference:
    head = re.match(_NAME, path)
    assert head is not None
    parts: list[str | int] = []
    for part in _PART.finditer(path, head.end()):
        name, index, double_quoted, single_quoted = part.groups()
        if index is not None:
            parts.append(int(index))
        elif name is not None:
            parts.append(name)
        else:
            parts.append(double_quoted if double_quoted is not None else single_quoted)
    return Reference(head.group(), tuple(parts))


def _parse_with_jinja(text: str) -> tuple[Reference, ...]:
    env = template_environment()
    try:
        tree = env.parse(text)
    except TemplateSyntaxError as exc:
        message = (exc.message or "invalid template").rstrip(".")
        raise TemplateError(message, exc.lineno or 1) from None
    for used_filter in tree.find_all(nodes.Filter):
        if used_filter.name not in env.filters:
            raise TemplateError(f"no filter named '{used_filter.name}'", used_filter.lineno)
    for used_test in tree.find_all(nodes.Test):
        if used_test.name not in env.tests:
            raise TemplateError(f"no test named '{used_test.name}'", used_test.lineno)
    free = find_undeclared_variables(tree)
    refs: list[Reference] = []
    _collect(tree, free, refs)
    return tuple(refs)


def _collect(node: nodes.Node, free: set[str], refs: list[Reference]) -> None:
    """Record the longest attribute/item chain on each free name, outermost first."""
    if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr):
        # `inputs.data.items()`: a method call; the data read is `inputs.data`.
        _collect(node.node.node, free, refs)
        for child in (*node.args, *node.kwargs):
            _collect(child, free, refs)
        return
    chain = _chain(node)
    if chain is not None and chain.root in free:
        refs.append(chain)
        # Still visit subscripts inside the chain, e.g. items[steps.a.output.i].
        inner: nodes.Node = node
        while isinstance(inner, nodes.Getattr | nodes.Getitem):
            if isinstance(inner, nodes.Getitem):
                _collect(inner.arg, free, refs)
            inner = inner.node
        return
    for child in node.iter_child_nodes():
        _collect(child, free, refs)


def _chain(node: nodes.Node) -> Reference | None:
    parts: list[str | int] = []
    while True:
        if isinstance(node, nodes.Getattr):
            parts.append(node.attr)
            node = node.node
        elif isinstance(node, nodes.Getitem):
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str | int):
                parts.append(node.arg.value)
            else:
                parts.clear()  # a computed key: only the prefix before it is known
            node = node.node
        elif isinstance(node, nodes.Name) and node.ctx == "load":
            return Reference(node.name, tuple(reversed(parts)))
        else:
            return None
