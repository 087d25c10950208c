"""Requests checked against Step Functions' own service model (botocore's copy of it), the way the
service checks them: a member of the wrong JSON type is a SerializationException; a missing
required member or a broken constraint (length, range, enum, pattern) is a ValidationException
worded as AWS words it, so a message read against the local engine reads the same on AWS."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import botocore.session  # type: ignore[import-untyped]
from botocore.model import (  # type: ignore[import-untyped]
    ListShape,
    MapShape,
    OperationModel,
    Shape,
    StructureShape,
)

from switchyard.engine.api.errors import SerializationException, UnknownOperationException
from switchyard.engine.errors import ValidationException
from switchyard.serving.jsontext import holdable_text_problem

SERVICE = "stepfunctions"

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "timestamp": (int, float),
    "structure": (dict,),
    "map": (dict,),
    "list": (list,),
}
_SHOWN_VALUE_LENGTH = 64


@functools.cache
def operation_model(operation: str) -> OperationModel:
    """The service model's operation; UnknownOperationException for a name it does not have."""
    model = botocore.session.get_session().get_service_model(SERVICE)
    if operation not in model.operation_names:
        raise UnknownOperationException(f"Operation {operation} is not supported by Step Functions")
    return model.operation_model(operation)


def check_request(operation: str, body: dict[str, Any]) -> None:
    """Raise the error AWS would for a request body that does not fit the operation's input."""
    shape = operation_model(operation).input_shape
    if shape is None:
        return
    problems: list[str] = []
    _check_members(shape, body, "", problems)
    if problems:
        count = len(problems)
        plural = "s" if count > 1 else ""
        raise ValidationException(
            f"{count} validation error{plural} detected: " + "; ".join(problems)
        )


def _check_members(
    shape: StructureShape, value: dict[str, Any], prefix: str, problems: list[str]
) -> None:
    for name in shape.required_members:
        if value.get(name) is None:
            problems.append(
                f"Value null at '{prefix}{name}' failed to satisfy constraint:"
                " Member must not be null"
            )
    for name, member in shape.members.items():
        if value.get(name) is not None:
            _check_value(member, value[name], f"{prefix}{name}", problems)


def _check_value(shape: Shape, value: Any, path: str, problems: list[str]) -> None:
    if not _has_json_type(value, shape.type_name):
        raise SerializationException(
            f"Member '{path}' must be a JSON {_json_type_name(shape.type_name)}"
        )
    broken = _Broken(shape, value, path, problems)
    if isinstance(shape, StructureShape):
        _check_members(shape, value, f"{path}.", problems)
    elif isinstance(shape, ListShape):
        _check_length(broken, len(value))
        for index, item in enumerate(value, start=1):
            _check_value(shape.member, item, f"{path}.{index}.member", problems)
    elif isinstance(shape, MapShape):
        for key, item in value.items():
            if holdable_text_problem(key) is not None:
                broken("have keys without a NUL character or a lone surrogate")
                continue
            _check_value(shape.value, item, f"{path}.{key}", problems)
    elif isinstance(value, str):
        if holdable_text_problem(value) is not None:
            broken("not contain a NUL character or a lone surrogate")
            return
        _check_length(broken, len(value))
        if shape.enum and value not in shape.enum:
            broken(f"satisfy enum value set: [{', '.join(shape.enum)}]")
        pattern = _pattern(shape.metadata.get("pattern"))
        if pattern is not None and not pattern.fullmatch(value):
            broken(f"satisfy regular expression pattern: {shape.metadata['pattern']}")
    elif isinstance(value, int | float):
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and value < low:
            broken(f"have value greater than or equal to {low}")
        if high is not None and value > high:
            broken(f"have value less than or equal to {high}")


def _has_json_type(value: Any, type_name: str) -> bool:
    if isinstance(value, bool) and type_name != "boolean":
        return False
    return isinstance(value, _JSON_TYPES.get(type_name, (object,)))


def _check_length(broken: _Broken, length: int) -> None:
    low, high = broken.shape.metadata.get("min"), broken.shape.metadata.get("max")
    if low is not None and length < low:
        broken(f"have length greater than or equal to {low}")
    if high is not None and length > high:
        broken(f"have length less than or equal to {high}")


@dataclass(frozen=True)
class _Broken:
    """Records one broken constraint of one value, in AWS's words."""

    shape: Shape
    value: Any
    path: str
    problems: list[str]

    def __call__(self, constraint: str) -> None:
        self.problems.append(
            f"{_shown(self.shape, self.value)} at '{self.path}' failed to satisfy constraint:"
            f" Member must {constraint}"
        )


def _shown(shape: Shape, value: Any) -> str:
    """`Value 'x'`; sensitive or long values are not echoed back, as AWS does not."""
    shown = str(value)
    if shape.metadata.get("sensitive") or len(shown) > _SHOWN_VALUE_LENGTH:
        return "Value"
    if holdable_text_problem(shown) is not None:
        return "Value"
    return f"Value '{value}'"


@functools.cache
def _pattern(source: str | None) -> re.Pattern[str] | None:
    """The model's (Java) pattern in Python's dialect; None where it has none or no translation."""
    if not source:
        return None
    try:
        return re.compile(source.replace(r"\p{ASCII}", r"[\x00-\x7f]"))
    except re.error:
        return None


def _json_type_name(type_name: str) -> str:
    return {"structure": "object", "map": "object", "list": "array", "timestamp": "number"}.get(
        type_name, "number" if type_name in ("integer", "long", "float", "double") else type_name
    )
