"""Parse intrinsic function calls (`States.Format('{}', $.name)`) into a small syntax tree.

Arguments are string literals in single quotes (`\\'`, `\\{`, `\\}` and `\\\\` escape the reserved
characters), numbers, `true`, `false`, `null`, paths (`$.a[0]`), context paths (`$$.Execution.Id`)
and nested calls. The number of arguments is checked here, against each function's arity, so a
wrong call is a definition error; argument *values* are checked when the call is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from switchyard.engine.asl.errors import InvalidPathError
from switchyard.engine.asl.jsonpath import JsonPath, compile_context_path, compile_path

ARITY: dict[str, tuple[int, int | None]] = {
    "States.Format": (1, None),
    "States.StringToJson": (1, 1),
    "States.JsonToString": (1, 1),
    "States.Array": (0, None),
    "States.ArrayPartition": (2, 2),
    "States.ArrayContains": (2, 2),
    "States.ArrayRange": (3, 3),
    "States.ArrayGetItem": (2, 2),
    "States.ArrayLength": (1, 1),
    "States.ArrayUnique": (1, 1),
    "States.Base64Encode": (1, 1),
    "States.Base64Decode": (1, 1),
    "States.Hash": (2, 2),
    "States.JsonMerge": (3, 3),
    "States.MathRandom": (2, 3),
    "States.MathAdd": (2, 2),
    "States.StringSplit": (2, 2),
    "States.UUID": (0, 0),
}
"""Every intrinsic function, with its minimum and maximum number of arguments."""

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_FUNCTION_NAME = re.compile(r"States\.[A-Za-z0-9]+")


class IntrinsicSyntaxError(ValueError):
    """The text is not a valid intrinsic function call."""


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal argument. For a string, `raw` keeps the escapes (States.Format needs them)."""

    value: Any
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class PathArgument:
    path: JsonPath
    text: str


@dataclass(frozen=True, slots=True)
class ContextPathArgument:
    path: JsonPath
    text: str


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    arguments: tuple[Argument, ...]
    text: str


Argument = Literal | PathArgument | ContextPathArgument | Call


def looks_like_intrinsic(text: str) -> bool:
    return text.lstrip().startswith("States.")


@lru_cache(maxsize=4096)
def parse_intrinsic(text: str) -> Call:
    """Parse one intrinsic function call; raises `IntrinsicSyntaxError` with the reason."""
    parser = _Parser(text)
    call = parser.call()
    parser.skip_space()
    if parser.pos != len(text):
        raise parser.error("unexpected text after the closing parenthesis")
    return call


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, reason: str) -> IntrinsicSyntaxError:
        return IntrinsicSyntaxError(
            f"The intrinsic function '{self.text}' is not valid: {reason} (at character {self.pos})"
        )

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def call(self) -> Call:
        self.skip_space()
        start = self.pos
        match = _FUNCTION_NAME.match(self.text, self.pos)
        if match is None:
            raise self.error("expected a function name such as States.Format")
        name = match.group(0)
        if name not in ARITY:
            raise self.error(f"'{name}' is not an intrinsic function")
        self.pos = match.end()
        self.skip_space()
        if self.peek() != "(":
            raise self.error(f"expected '(' after {name}")
        self.pos += 1
        arguments: list[Argument] = []
        self.skip_space()
        if self.peek() == ")":
            self.pos += 1
        else:
            while True:
                arguments.append(self.argument())
                self.skip_space()
                char = self.peek()
                self.pos += 1
                if char == ")":
                    break
                if char != ",":
                    self.pos -= 1
                    raise self.error("expected ',' or ')'")
        low, high = ARITY[name]
        if len(arguments) < low or (high is not None and len(arguments) > high):
            expected = str(low) if low == high else f"{low}..{high if high is not None else 'n'}"
            raise self.error(f"{name} takes {expected} argument(s), got {len(arguments)}")
        return Call(name, tuple(arguments), self.text[start : self.pos].strip())

    def argument(self) -> Argument:
        self.skip_space()
        char = self.peek()
        if char == "'":
            return self.string()
        if char == "$":
            return self.path()
        if self.text.startswith("States.", self.pos):
            return self.call()
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return Literal(value)
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.error("expected a string, number, boolean, null, path or function call")
        self.pos = match.end()
        number = match.group(0)
        is_float = any(c in number for c in ".eE")
        return Literal(float(number) if is_float else int(number))

    def string(self) -> Literal:
        self.pos += 1  # the opening quote
        start = self.pos
        chars: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\" and self.pos + 1 < len(self.text):
                chars.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if char == "'":
                raw = self.text[start : self.pos]
                self.pos += 1
                return Literal("".join(chars), raw)
            chars.append(char)
            self.pos += 1
        raise self.error("unterminated string literal")

    def path(self) -> PathArgument | ContextPathArgument:
        start = self.pos
        depth, quote = 0, ""
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if quote:
                if char == "\\":
                    self.pos += 1
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char in "[(":
                depth += 1
            elif char in "])":
                if depth == 0:
                    break
                depth -= 1
            elif char == "," and depth == 0:
                break
            self.pos += 1
        text = self.text[start : self.pos].strip()
        try:
            if text.startswith("$$"):
                return ContextPathArgument(compile_context_path(text), text)
            return PathArgument(compile_path(text), text)
        except InvalidPathError as error:
            raise self.error(str(error)) from error
