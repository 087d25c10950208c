"""Parser of the condition language (docs/workflow-format.md#conditions).

    operand    := path | string | number | true | false | null
    path       := name (.name | [int])*
    comparison := operand (== | != | < | <= | > | >=) operand
                | path in [literal, ...] | path matches "glob" | path exists
                | path is null | path is not null
    expr       := comparison | expr and expr | expr or expr | not expr | ( expr )

`not` binds tighter than `and`, which binds tighter than `or`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from switchyard.conditions.ast import (
    And,
    Compare,
    CompareOp,
    Exists,
    Expr,
    In,
    IsNull,
    Literal,
    Matches,
    Not,
    Operand,
    Or,
    Path,
    Scalar,
)


class ConditionError(ValueError):
    """A condition that does not parse; `column` is 1-based."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.column = column

    def __str__(self) -> str:
        return f"{self.message} (column {self.column})"


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # name, number, string, op, punct, end
    text: str
    column: int
    value: Scalar = None


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|<|>)
  | (?P<punct>[.\[\](),])
    """,
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "matches", "exists", "is", "true", "false", "null"}


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ConditionError(f"unexpected character {text[pos]!r}", pos + 1)
        kind = cast(str, match.lastgroup)
        raw = match.group()
        column = pos + 1
        pos = match.end()
        if kind == "space":
            continue
        if kind == "number":
            number: int | float = float(raw) if any(c in raw for c in ".eE") else int(raw)
            tokens.append(_Token(kind, raw, column, number))
        elif kind == "string":
            tokens.append(_Token(kind, raw, column, _unquote(raw, column)))
        else:
            tokens.append(_Token(kind, raw, column))
    tokens.append(_Token("end", "", len(text) + 1))
    return tokens


def _unquote(raw: str, column: int) -> str:
    body = raw[1:-1]
    if raw[0] == "'":
        body = body.replace("\\'", "'").replace('"', '\\"')
    try:
        return cast(str, json.loads(f'"{body}"'))
    except json.JSONDecodeError:
        raise ConditionError(f"bad escape in string {raw}", column) from None


class _Parser:
    def __init__(self, text: str) -> None:
        self._tokens = _tokenize(text)
        self._pos = 0

    @property
    def _peek(self) -> _Token:
        return self._tokens[self._pos]

    def _next(self) -> _Token:
        token = self._tokens[self._pos]
        self._pos += 1
        return token

    def _is(self, kind: str, text: str | None = None) -> bool:
        token = self._peek
        return token.kind == kind and (text is None or token.text == text)

    def _expect(self, kind: str, text: str, what: str) -> _Token:
        if not self._is(kind, text):
            raise ConditionError(
                f"expected {what}, found {_describe(self._peek)}", self._peek.column
            )
        return self._next()

    def parse(self) -> Expr:
        if self._is("end"):
            raise ConditionError("the condition is empty", 1)
        expr = self._or()
        if not self._is("end"):
            token = self._peek
            raise ConditionError(
                f"unexpected {_describe(token)}; join conditions with 'and' or 'or'", token.column
            )
        return expr

    def _or(self) -> Expr:
        items = [self._and()]
        while self._is("name", "or"):
            self._next()
            items.append(self._and())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def _and(self) -> Expr:
        items = [self._not()]
        while self._is("name", "and"):
            self._next()
            items.append(self._not())
        return items[0] if len(items) == 1 else And(tuple(items))

    def _not(self) -> Expr:
        if self._is("name", "not"):
            self._next()
            return Not(self._not())
        if self._is("punct", "("):
            self._next()
            expr = self._or()
            self._expect("punct", ")", "')'")
            return expr
        return self._comparison()

    def _comparison(self) -> Expr:
        left = self._operand()
        token = self._peek
        if token.kind == "op":
            self._next()
            right = self._operand()
            return Compare(cast(CompareOp, token.text), left, right)
        if token.kind == "name" and token.text in ("in", "matches", "exists", "is"):
            path = self._require_path(left, token)
            return self._path_test(path)
        raise ConditionError(
            f"expected a comparison (==, !=, <, <=, >, >=, in, matches, exists, is) after "
            f"{_operand_text(left)}, found {_describe(token)}",
            token.column,
        )

    def _path_test(self, path: Path) -> Expr:
        keyword = self._next()
        if keyword.text == "exists":
            return Exists(path)
        if keyword.text == "is":
            negated = False
            if self._is("name", "not"):
                self._next()
                negated = True
            self._expect("name", "null", "'null' after 'is'")
            return IsNull(path, negated)
        if keyword.text == "matches":
            pattern = self._peek
            if pattern.kind != "string":
                raise ConditionError(
                    "'matches' needs a quoted glob pattern, e.g. \"INV-*\"", pattern.column
                )
            self._next()
            return Matches(path, cast(str, pattern.value))
        return In(path, self._literal_list())

    def _literal_list(self) -> tuple[Literal, ...]:
        self._expect("punct", "[", "'[' to start the list after 'in'")
        values: list[Literal] = []
        while not self._is("punct", "]"):
            operand = self._operand()
            if isinstance(operand, Path):
                raise ConditionError("lists after 'in' hold literals only", operand.column)
            values.append(operand)
            if not self._is("punct", ","):
                break
            self._next()
        self._expect("punct", "]", "',' or ']' in the list")
        if not values:
            raise ConditionError("the list after 'in' is empty", self._tokens[self._pos - 1].column)
        return tuple(values)

    def _operand(self) -> Operand:
        token = self._next()
        if token.kind in ("number", "string"):
            return Literal(token.value, token.column)
        if token.kind == "name":
            if token.text in ("true", "false"):
                return Literal(token.text == "true", token.column)
            if token.text == "null":
                return Literal(None, token.column)
            if token.text in _KEYWORDS:
                raise ConditionError(f"expected a value, found '{token.text}'", token.column)
            return self._path_rest(token)
        raise ConditionError(f"expected a path or a value, found {_describe(token)}", token.column)

    def _path_rest(self, head: _Token) -> Path:
        parts: list[str | int] = []
        while True:
            if self._is("punct", "."):
                self._next()
                name = self._next()
                if name.kind != "name":
                    raise ConditionError(
                        f"expected a name after '.', found {_describe(name)}", name.column
                    )
                parts.append(name.text)
            elif self._is("punct", "["):
                self._next()
                index = self._next()
                if index.kind != "number" or not isinstance(index.value, int) or index.value < 0:
                    raise ConditionError("expected a list index such as [0]", index.column)
                parts.append(index.value)
                self._expect("punct", "]", "']'")
            else:
                return Path(head.text, tuple(parts), head.column)

    @staticmethod
    def _require_path(operand: Operand, keyword: _Token) -> Path:
        if isinstance(operand, Path):
            return operand
        raise ConditionError(f"'{keyword.text}' needs a path on its left", operand.column)


def _describe(token: _Token) -> str:
    return "the end of the condition" if token.kind == "end" else f"'{token.text}'"


def _operand_text(operand: Operand) -> str:
    return operand.text if isinstance(operand, Path) else json.dumps(operand.value)


@lru_cache(maxsize=4096)
def parse_condition(text: str) -> Expr:
    """Parse a condition; raises ConditionError with a 1-based column."""
    return _Parser(text).parse()


@lru_cache(maxsize=1024)
def parse_path(text: str) -> Path:
    """Parse a bare path such as `steps.classify.output.confidence`."""
    parser = _Parser(text)
    head = parser._next()
    if head.kind != "name" or head.text in _KEYWORDS:
        raise ConditionError(
            f"expected a path such as steps.x.output.score, found {_describe(head)}", head.column
        )
    path = parser._path_rest(head)
    if not parser._is("end"):
        raise ConditionError(
            f"unexpected {_describe(parser._peek)} after the path", parser._peek.column
        )
    return path
