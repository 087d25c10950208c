"""Payload templates: `Parameters`, `ResultSelector` and `ItemSelector`.

A key ending in `.$` takes its value from a path (`$.a`), a context path (`$$.Execution.Id`) or an
intrinsic function call, and loses the `.$`; nested objects and arrays are templates too; every
other value passes through. A template is compiled once (at definition time, where a bad `.$`
value is a definition error) into a tree of small closures, so evaluating it is one call.

Evaluation never mutates its input. The result may share structure with the input and with the
template's static values: treat JSON values as immutable, or copy before mutating.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from switchyard.engine.asl.errors import AslFailure, InvalidPathError, StatesError, to_json_text
from switchyard.engine.asl.intrinsic_parser import (
    IntrinsicSyntaxError,
    looks_like_intrinsic,
    parse_intrinsic,
)
from switchyard.engine.asl.intrinsics import DEFAULT_ENTROPY, Entropy, evaluate_intrinsic
from switchyard.engine.asl.jsonpath import (
    JsonPath,
    PathNotFoundError,
    ReferencePath,
    compile_context_path,
    compile_path,
)

Evaluator = Callable[[Any, Any, Entropy], Any]
"""(state input, context object, entropy) -> value."""


class TemplateError(ValueError):
    """A payload template is not valid; `location` is a JSON-pointer-like path to the field."""

    def __init__(self, message: str, location: str) -> None:
        super().__init__(message)
        self.location = location


@dataclass(frozen=True, slots=True)
class PayloadTemplate:
    """A compiled payload template. `source` is the template as written in the definition."""

    source: Any
    _evaluate: Evaluator | None = field(repr=False, compare=False)

    @classmethod
    def compile(cls, source: Any, location: str = "") -> PayloadTemplate:
        dynamic, compiled = _compile(source, location)
        return cls(source, compiled if dynamic else None)

    @property
    def is_static(self) -> bool:
        return self._evaluate is None

    def evaluate(self, data: Any, context: Any, entropy: Entropy = DEFAULT_ENTROPY) -> Any:
        """The payload for state input `data`; raises `AslFailure` (`States.Runtime` for a path
        that matches nothing, `States.IntrinsicFailure` for a failing intrinsic call)."""
        if self._evaluate is None:
            return self.source
        return self._evaluate(data, context, entropy)


def compile_value_expression(text: Any, field_name: str, location: str) -> Evaluator:
    """Compile the value of a `<field_name>.$` key (also used by `Fail` ErrorPath/CausePath)."""
    if not isinstance(text, str):
        raise TemplateError(
            f"The value for the field '{field_name}' must be a STRING that contains a JSONPath "
            "or an intrinsic function call",
            location,
        )
    try:
        if text.startswith("$$"):
            return _context_path_evaluator(compile_context_path(text), text, field_name)
        if text.startswith("$"):
            return _path_evaluator(compile_path(text), field_name)
        if looks_like_intrinsic(text):
            call = parse_intrinsic(text.strip())
            return lambda data, context, entropy: evaluate_intrinsic(call, data, context, entropy)
    except (InvalidPathError, IntrinsicSyntaxError) as error:
        raise TemplateError(
            f"The value for the field '{field_name}' must be a valid JSONPath or a valid "
            f"intrinsic function call: {error}",
            location,
        ) from error
    raise TemplateError(
        f"The value for the field '{field_name}' must be a valid JSONPath or a valid intrinsic "
        f"function call, got '{text}'",
        location,
    )


def _path_evaluator(path: JsonPath, field_name: str) -> Evaluator:
    if isinstance(path, ReferencePath) and path.is_root:
        return lambda data, context, entropy: data

    def evaluate(data: Any, context: Any, entropy: Entropy) -> Any:
        try:
            return path.evaluate(data)
        except PathNotFoundError:
            raise AslFailure(
                StatesError.RUNTIME,
                f"The JSONPath '{path.text}' specified for the field '{field_name}' could not "
                f"be found in the input '{to_json_text(data)}'",
            ) from None

    return evaluate


def _context_path_evaluator(path: JsonPath, text: str, field_name: str) -> Evaluator:
    def evaluate(data: Any, context: Any, entropy: Entropy) -> Any:
        try:
            return path.evaluate(context)
        except PathNotFoundError:
            raise AslFailure(
                StatesError.RUNTIME,
                f"The JSONPath '{text}' specified for the field '{field_name}' could not be "
                f"found in the input '{to_json_text(context)}'",
            ) from None

    return evaluate


def _compile(source: Any, location: str) -> tuple[bool, Any]:
    """(is dynamic, evaluator) for a dynamic value; (False, source) for a static one."""
    if isinstance(source, dict):
        return _compile_object(source, location)
    if isinstance(source, list):
        compiled = [_compile(item, f"{location}/{i}") for i, item in enumerate(source)]
        if not any(dynamic for dynamic, _ in compiled):
            return False, source
        parts = [(dynamic, value) for dynamic, value in compiled]

        def evaluate_list(data: Any, context: Any, entropy: Entropy) -> list[Any]:
            return [value(data, context, entropy) if dynamic else value for dynamic, value in parts]

        return True, evaluate_list
    return False, source


def _compile_object(source: dict[str, Any], location: str) -> tuple[bool, Any]:
    entries: list[tuple[str, bool, Any]] = []
    names: set[str] = set()
    for key, value in source.items():
        where = f"{location}/{key}"
        if key.endswith(".$"):
            name = key[:-2]
            entries.append((name, True, compile_value_expression(value, key, where)))
        else:
            name = key
            dynamic, compiled = _compile(value, where)
            entries.append((name, dynamic, compiled))
        if name in names:
            raise TemplateError(f"The field '{name}' is given twice (with and without '.$')", where)
        names.add(name)
    if not any(dynamic for _, dynamic, _ in entries):
        return False, source

    def evaluate_object(data: Any, context: Any, entropy: Entropy) -> dict[str, Any]:
        return {
            name: value(data, context, entropy) if dynamic else value
            for name, dynamic, value in entries
        }

    return True, evaluate_object
