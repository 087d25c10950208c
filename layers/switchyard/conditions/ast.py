"""Typed syntax tree of the condition language."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal as TypingLiteral

Scalar = str | int | float | bool | None
CompareOp = TypingLiteral["==", "!=", "<", "<=", ">", ">="]


@dataclass(frozen=True, slots=True)
class Path:
    """`steps.classify.output.label`: a root name and the keys and indexes below it."""

    root: str
    parts: tuple[str | int, ...]
    column: int

    @property
    def text(self) -> str:
        out = self.root
        for part in self.parts:
            out += f"[{part}]" if isinstance(part, int) else f".{part}"
        return out

    def jsonpath(self, prefix: str = "$") -> str:
        """The same path below `prefix` as a Step Functions JSONPath."""
        out = f"{prefix}.{self.root}"
        for part in self.parts:
            out += f"[{part}]" if isinstance(part, int) else f".{part}"
        return out


@dataclass(frozen=True, slots=True)
class Literal:
    value: Scalar
    column: int


Operand = Path | Literal


@dataclass(frozen=True, slots=True)
class Compare:
    op: CompareOp
    left: Operand
    right: Operand


@dataclass(frozen=True, slots=True)
class In:
    path: Path
    values: tuple[Literal, ...]


@dataclass(frozen=True, slots=True)
class Matches:
    path: Path
    pattern: str


@dataclass(frozen=True, slots=True)
class Exists:
    path: Path


@dataclass(frozen=True, slots=True)
class IsNull:
    path: Path
    negated: bool


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Expr


Expr = Compare | In | Matches | Exists | IsNull | And | Or | Not


def paths_in(expr: Expr) -> Iterator[Path]:
    """Every path the condition reads, left to right."""
    if isinstance(expr, Compare):
        for side in (expr.left, expr.right):
            if isinstance(side, Path):
                yield side
    elif isinstance(expr, In | Matches | Exists | IsNull):
        yield expr.path
    elif isinstance(expr, And | Or):
        for item in expr.items:
            yield from paths_in(item)
    else:
        yield from paths_in(expr.item)


def type_name(value: Scalar) -> str:
    """JSON type of a literal, as JSON Schema names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"
