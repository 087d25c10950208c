"""Templates and conditions: they parse, read only names in scope and steps upstream, and use
fields that the upstream `output_schema` allows, compared with values of the right type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from switchyard.conditions import (
    And,
    Compare,
    ConditionError,
    Expr,
    In,
    Literal,
    Matches,
    Not,
    Or,
    Path,
    parse_condition,
    paths_in,
    type_name,
)
from switchyard.diagnostics import Code
from switchyard.model import Workflow
from switchyard.source import DocPath
from switchyard.templates import TemplateError, template_environment, template_info
from switchyard.validate.context import Checks
from switchyard.validate.graph import Upstream
from switchyard.validate.output_types import (
    RUN_FIELDS,
    STEP_RECORD_FIELDS,
    Schema,
    json_types,
    output_schema,
    walk,
)

Parts = tuple[str | int, ...]
_BARE_PATH = re.compile(r"^\{\{\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\d+\])*\s*\}\}$")
"""`{{ steps.x.output.y }}` with no filter: its value keeps the type at that path."""


@dataclass(frozen=True)
class Scope:
    """Where a template or condition sits: which names it may read and which steps are upstream."""

    roots: frozenset[str]
    owner: str | None = None
    """The step whose upstream steps may be read; None: any step (workflow outputs)."""
    schemas: dict[str, Schema] = field(default_factory=dict)
    """Known shapes of extra roots, e.g. `output` inside a loop's `until`."""
    also_visible: frozenset[str] = frozenset()
    """Steps readable besides those upstream: a fallback reads the step it backs up."""

    def with_roots(self, *names: str, **schemas: Schema) -> Scope:
        return Scope(
            self.roots | set(names) | set(schemas),
            self.owner,
            {**self.schemas, **schemas},
            self.also_visible,
        )


class ReferenceChecker:
    def __init__(self, checks: Checks, upstream: Upstream) -> None:
        self._checks = checks
        self._workflow: Workflow = checks.workflow
        self._upstream = upstream
        self._globals = frozenset(template_environment().globals)
        self._output_schemas: dict[str, Schema] = {}

    # --- templates -------------------------------------------------------------------------

    def templates(self, value: Any, path: DocPath, scope: Scope) -> None:
        """Check every template string inside `value` (a string, list or mapping)."""
        for where, text in _strings(value, path):
            self.template(text, where, scope)

    def template(self, text: str, path: DocPath, scope: Scope) -> None:
        try:
            info = template_info(text)
        except TemplateError as problem:
            where = f" (line {problem.line} of the template)" if "\n" in text.strip() else ""
            self._checks.report(
                Code.BAD_TEMPLATE,
                path,
                f"the template does not parse: {problem.message}{where}; "
                "write expressions as {{ steps.<id>.output.<field> }}",
            )
            return
        for ref in info.references:
            if ref.root in self._globals and ref.root not in scope.roots:
                continue
            self._reference(ref.root, ref.parts, path, scope, Code.BAD_TEMPLATE)

    def value_types(self, text: str, scope: Scope) -> tuple[set[str] | None, str]:
        """The JSON types `text` renders to, and what it is (for messages); None when unknown.

        Text, and a template with text around its expressions, render to a string; a lone
        `{{ path }}` keeps the type its schema gives; a lone expression with filters is unknown.
        """
        try:
            info = template_info(text)
        except TemplateError:
            return None, ""
        if info.is_static:
            return {"string"}, f"'{text}' is text"
        if not info.single_expression:
            return {"string"}, "this template renders text"
        if len(info.references) != 1 or not _BARE_PATH.match(text.strip()):
            return None, ""
        ref = info.references[0]
        if ref.root not in scope.roots:
            return None, ""
        schema, problem = self._resolve(ref.root, ref.parts, scope)
        types = json_types(schema) if problem is None else None
        if types is None:
            return None, ""
        return types, f"{ref.text} is {_types_text(types)} by its schema"

    # --- conditions ------------------------------------------------------------------------

    def condition(self, text: str, path: DocPath, scope: Scope) -> Expr | None:
        try:
            expr = parse_condition(text)
        except ConditionError as problem:
            self._checks.report(
                Code.BAD_CONDITION,
                path,
                f"{problem.message} at column {problem.column} of '{text}'",
            )
            return None
        for node in paths_in(expr):
            self._reference(node.root, node.parts, path, scope, Code.BAD_CONDITION)
        self._compare_types(expr, path, scope, text)
        return expr

    def path_schema(self, node: Path, scope: Scope) -> Schema:
        """The schema of the value at a condition path (`{}` when unknown or invalid)."""
        schema, problem = self._resolve(node.root, node.parts, scope)
        return schema if problem is None else {}

    def _compare_types(self, expr: Expr, path: DocPath, scope: Scope, text: str) -> None:
        for node in _comparisons(expr):
            if isinstance(node, Compare):
                left, right = node.left, node.right
                if isinstance(left, Literal) and isinstance(right, Literal):
                    self._checks.report(
                        Code.BAD_CONDITION,
                        path,
                        f"'{text}' compares two literals; compare a path such as "
                        "steps.<id>.output.<field> with a value",
                    )
                    continue
                if isinstance(left, Path) and isinstance(right, Path):
                    self._paths_comparable(left, right, path, scope)
                    continue
                side = left if isinstance(left, Path) else right
                value = right if isinstance(right, Literal) else left
                assert isinstance(side, Path) and isinstance(value, Literal)
                if value.value is None and node.op == "!=":
                    self._checks.report(
                        Code.BAD_CONDITION,
                        path,
                        f"'{text}' is never true (a comparison of different types is false); "
                        f"write '{side.text} is not null'",
                    )
                    continue
                self._literal_fits(side, [value], path, scope, ordered=node.op not in ("==", "!="))
            elif isinstance(node, In):
                self._literal_fits(node.path, list(node.values), path, scope, ordered=False)
            elif isinstance(node, Matches):
                types = json_types(self.path_schema(node.path, scope))
                if types is not None and "string" not in types:
                    self._checks.report(
                        Code.TYPE_MISMATCH,
                        path,
                        f"{node.path.text} is {_types_text(types)}; 'matches' needs a string",
                    )

    def _literal_fits(
        self, node: Path, values: list[Literal], path: DocPath, scope: Scope, *, ordered: bool
    ) -> None:
        schema = self.path_schema(node, scope)
        types = json_types(schema)
        for value in values:
            kind = type_name(value.value)
            if kind == "null" and not ordered:
                continue  # `x == null` is how a skipped step's output is guarded
            if types is not None and kind not in types:
                self._checks.report(
                    Code.TYPE_MISMATCH,
                    path,
                    f"{node.text} is {_types_text(types)} but is compared with "
                    f"{_literal_text(value)} ({kind}); a comparison of different types is "
                    "always false",
                )
                continue
            if ordered and kind not in ("number", "string"):
                self._checks.report(
                    Code.TYPE_MISMATCH,
                    path,
                    f"{_literal_text(value)} cannot be ordered; use == or != with {kind} values",
                )
                continue
            enum = schema.get("enum")
            if not ordered and isinstance(enum, list) and value.value not in enum:
                allowed = ", ".join(_literal_text(Literal(v, 0)) for v in enum)
                self._checks.report(
                    Code.TYPE_MISMATCH,
                    path,
                    f"{node.text} is one of {allowed}; {_literal_text(value)} can never match",
                )

    def _paths_comparable(self, left: Path, right: Path, path: DocPath, scope: Scope) -> None:
        left_types = json_types(self.path_schema(left, scope))
        right_types = json_types(self.path_schema(right, scope))
        if left_types is not None and right_types is not None and not left_types & right_types:
            self._checks.report(
                Code.TYPE_MISMATCH,
                path,
                f"{left.text} is {_types_text(left_types)} and {right.text} is "
                f"{_types_text(right_types)}; a comparison of different types is always false",
            )

    # --- references ------------------------------------------------------------------------

    def _reference(self, root: str, parts: Parts, path: DocPath, scope: Scope, code: Code) -> None:
        if root not in scope.roots:
            allowed = ", ".join(sorted(scope.roots))
            self._checks.report(code, path, f"unknown name '{root}'; here you can read: {allowed}")
            return
        if root == "steps" and parts:
            step_id = parts[0]
            if not isinstance(step_id, str) or not self._checks.step_exists(step_id):
                self._checks.report(
                    Code.UNKNOWN_STEP,
                    path,
                    f"steps.{step_id} names no step of this workflow; "
                    f"check the id (steps: {_few(self._workflow.steps)})",
                )
                return
            visible = step_id in scope.also_visible or scope.owner is None
            if not visible and not self._is_upstream(step_id, str(scope.owner)):
                self._checks.report(
                    code,
                    path,
                    f"step '{step_id}' is not upstream of '{scope.owner}', so its result is not "
                    f"there yet; add '{step_id}' to steps.{scope.owner}.after (directly or through "
                    "another step)",
                )
                return
        _, problem = self._resolve(root, parts, scope)
        if problem is not None:
            self._checks.report(Code.TYPE_MISMATCH, path, problem)

    def _is_upstream(self, step_id: str, owner: str) -> bool:
        return self._upstream.is_upstream(step_id, owner)

    def _resolve(self, root: str, parts: Parts, scope: Scope) -> tuple[Schema, str | None]:
        """The schema at `root.parts`, or a message saying why the path cannot exist."""
        if root == "steps":
            return self._resolve_step(parts)
        if root == "inputs":
            return self._resolve_input(parts)
        if root == "run":
            return _resolve_fields("run", RUN_FIELDS, parts)
        if root in ("iteration", "index"):
            return _resolve_in({"type": "integer"}, root, parts)
        if root in scope.schemas:
            return _resolve_in(scope.schemas[root], root, parts)
        return {}, None

    def _resolve_step(self, parts: Parts) -> tuple[Schema, str | None]:
        if not parts:
            return {}, None
        step_id = str(parts[0])
        step = self._workflow.steps.get(step_id)
        if step is None:
            return {}, None
        label = f"steps.{step_id}"
        schema, problem = _resolve_fields(label, STEP_RECORD_FIELDS, parts[1:])
        if problem is not None or len(parts) < 3 or parts[1] != "output":
            return schema, problem
        if step_id not in self._output_schemas:
            self._output_schemas[step_id] = output_schema(step, self._workflow)
        return _resolve_in(self._output_schemas[step_id], f"{label}.output", parts[2:])

    def _resolve_input(self, parts: Parts) -> tuple[Schema, str | None]:
        if not parts:
            return {}, None
        name = parts[0]
        declared = self._workflow.inputs
        if not isinstance(name, str) or name not in declared:
            names = ", ".join(declared) or "none declared"
            return {}, (
                f"inputs.{name} is not a declared input (inputs: {names}); declare it under inputs"
            )
        return _resolve_in(declared[name], f"inputs.{name}", parts[1:])


def _resolve_fields(
    label: str, fields: dict[str, Schema], parts: Parts
) -> tuple[Schema, str | None]:
    if not parts:
        return {"type": "object"}, None
    head = parts[0]
    if not isinstance(head, str) or head not in fields:
        known = ", ".join(fields)
        return {}, f"{label} has no field '{head}' (its fields: {known})"
    return _resolve_in(fields[head], f"{label}.{head}", parts[1:])


def _resolve_in(schema: Schema, label: str, parts: Parts) -> tuple[Schema, str | None]:
    found, mismatch = walk(schema, parts)
    if mismatch is None:
        return found, None
    where = label + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in mismatch.prefix)
    hint = f"; {mismatch.hint}" if mismatch.hint else ""
    return {}, f"{where} {mismatch.message}, by its output_schema{hint}"


def _strings(value: Any, path: DocPath) -> Iterator[tuple[DocPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _comparisons(expr: Expr) -> Iterator[Expr]:
    if isinstance(expr, Compare | In | Matches):
        yield expr
    elif isinstance(expr, And | Or):
        for item in expr.items:
            yield from _comparisons(item)
    elif isinstance(expr, Not):
        yield from _comparisons(expr.item)


def _types_text(types: set[str]) -> str:
    text = " or ".join(sorted(types))
    return f"an {text}" if text[:1] in "aeiou" else f"a {text}"


def _literal_text(value: Literal) -> str:
    if isinstance(value.value, str):
        return f'"{value.value}"'
    if value.value is None:
        return "null"
    if isinstance(value.value, bool):
        return "true" if value.value else "false"
    return str(value.value)


def _few(ids: dict[str, Any]) -> str:
    names = list(ids)
    return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
