"""The JSONPath that Step Functions evaluates, compiled once per path string.

Two kinds of path, as in Step Functions (whose evaluator is Jayway JsonPath with a Jackson model):

- A **reference path** (`$`, `$.a.b`, `$['a b'][0]`) names at most one node. It is *definite*: it
  evaluates to that node itself, so `$.items[0].name` is the name, never `["name"]`. A missing
  property, a property of a non-object or an index into a non-array is a miss
  (`PathNotFoundError`); an index past the end of an array is `null`, as on AWS (Jackson answers
  `null` for it) - except where a caller asks for `strict` evaluation (intrinsic arguments).
  These are evaluated by a small hand-written walker: they run many times per state transition.
- A **query path** (wildcards `[*]` / `.*`, slices, unions, filters `[?(@.x > 1)]`, recursive
  descent `..`) is *indefinite*: it always evaluates to a list of the matches, `[]` when nothing
  matches. jsonpath-ng evaluates these.

`compile_path` caches compiled paths by their text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jsonpath_ng import JSONPath as _NgPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext.parser import parse as _ng_parse

from switchyard.engine.asl.errors import InvalidPathError, to_json_text

Step = str | int
"""One step of a reference path: an object property name or an array index."""

_INDEX = re.compile(r"-?\d+")
_NAME_STOP = frozenset(".[")
_NOT_IN_SIMPLE_NAME = frozenset("]()*?@,:'\" \t\n\r")


class PathNotFoundError(LookupError):
    """A definite path matched nothing in `data`. Callers turn it into Step Functions' message."""

    def __init__(self, path: str, data: Any) -> None:
        super().__init__(path)
        self.path = path
        self.data = data

    def __str__(self) -> str:
        shown = to_json_text(self.data)
        return f"The JSONPath '{self.path}' could not be found in the input '{shown}'"


@dataclass(frozen=True, slots=True)
class ReferencePath:
    """A definite path: `steps` from the root, each a property name or an array index."""

    text: str
    steps: tuple[Step, ...]
    definite: bool = field(default=True, init=False)

    @property
    def is_root(self) -> bool:
        return not self.steps

    def evaluate(self, data: Any, *, strict: bool = False) -> Any:
        """The node this path names in `data`; raises `PathNotFoundError` on a miss.

        An index past the end of an array gives `None` (AWS), or a miss when `strict`.
        """
        value = data
        for step in self.steps:
            if isinstance(step, str):
                if not isinstance(value, dict) or step not in value:
                    raise PathNotFoundError(self.text, data)
                value = value[step]
            else:
                if not isinstance(value, list):
                    raise PathNotFoundError(self.text, data)
                index = step if step >= 0 else len(value) + step
                if 0 <= index < len(value):
                    value = value[index]
                elif strict:
                    raise PathNotFoundError(self.text, data)
                else:
                    value = None
        return value

    def exists(self, data: Any) -> bool:
        """Whether the path names an existing node (for `IsPresent`)."""
        try:
            self.evaluate(data, strict=True)
        except PathNotFoundError:
            return False
        return True


@dataclass(frozen=True, slots=True)
class QueryPath:
    """An indefinite path: evaluates to the list of all matches."""

    text: str
    expression: _NgPath = field(compare=False, repr=False)
    definite: bool = field(default=False, init=False)

    def evaluate(self, data: Any, *, strict: bool = False) -> list[Any]:
        """Every match, in document order; `[]` when nothing matches (`strict` is ignored)."""
        del strict
        return [match.value for match in self.expression.find(data)]

    def exists(self, data: Any) -> bool:
        return bool(self.evaluate(data))


JsonPath = ReferencePath | QueryPath


@lru_cache(maxsize=8192)
def compile_path(text: str) -> JsonPath:
    """Compile a path that may use all of Step Functions' JSONPath (payload fields, InputPath)."""
    steps = _parse_reference_steps(text)
    if steps is not None:
        return ReferencePath(text, steps)
    if not text.startswith("$"):
        raise InvalidPathError(f"The path '{text}' must start with '$'")
    try:
        expression = _ng_parse(text)
    except (JsonPathLexerError, JsonPathParserError, Exception) as error:
        raise InvalidPathError(f"The path '{text}' is not valid JSONPath: {error}") from error
    return QueryPath(text, expression)


@lru_cache(maxsize=8192)
def compile_reference_path(text: str) -> ReferencePath:
    """Compile a path that must be a reference path (ResultPath, ItemsPath, *Path comparisons)."""
    steps = _parse_reference_steps(text)
    if steps is None:
        raise InvalidPathError(
            f"The value '{text}' is not a valid reference path: only '$', '.name', "
            "['name'] and [index] steps are allowed"
        )
    return ReferencePath(text, steps)


def compile_context_path(text: str) -> JsonPath:
    """Compile a `$$...` context-object path into the path it applies to the context object."""
    if not text.startswith("$$"):
        raise InvalidPathError(f"The context path '{text}' must start with '$$'")
    return compile_path(text[1:])


def _parse_reference_steps(text: str) -> tuple[Step, ...] | None:
    """The steps of `text` if it is a reference path, else None (not one, or not valid)."""
    if not text.startswith("$") or text.startswith("$$"):
        return None
    steps: list[Step] = []
    i, n = 1, len(text)
    while i < n:
        char = text[i]
        if char == ".":
            i += 1
            if i < n and text[i] == "[":
                continue  # `$.abc.['def ghi']`, as the Step Functions docs write it
            start = i
            while i < n and text[i] not in _NAME_STOP:
                i += 1
            name = text[start:i]
            if not name or any(c in _NOT_IN_SIMPLE_NAME for c in name):
                return None
            steps.append(name)
        elif char == "[":
            parsed = _parse_bracket(text, i + 1)
            if parsed is None:
                return None
            step, i = parsed
            steps.append(step)
        else:
            return None
    return tuple(steps)


def _parse_bracket(text: str, i: int) -> tuple[Step, int] | None:
    """Parse `'name']`, `"name"]` or `N]` starting at `i`; the step and the index after `]`."""
    n = len(text)
    if i < n and text[i] in "'\"":
        quote = text[i]
        chars: list[str] = []
        i += 1
        while i < n and text[i] != quote:
            if text[i] == "\\" and i + 1 < n:
                i += 1
            chars.append(text[i])
            i += 1
        if i + 1 >= n or text[i + 1] != "]":
            return None
        return "".join(chars), i + 2
    end = text.find("]", i)
    if end < 0 or not _INDEX.fullmatch(text[i:end]):
        return None
    return int(text[i:end]), end + 1
