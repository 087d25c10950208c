"""What each step's output looks like, as JSON Schema, and walking a path through a schema.

Used to find fields that cannot exist (`type_mismatch`). Where the shape is not known the schema
is `{}` (anything), so nothing is reported: no false alarms.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from switchyard.model import (
    AgentBody,
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    RuleRouter,
    ScoreRouter,
    Step,
    SubWorkflowBody,
    ToolBody,
    Workflow,
)
from switchyard.model.builtin_tools import BUILTIN_TOOLS

Schema = dict[str, Any]

TEXT_OUTPUT: Schema = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
GATE_OUTPUT: Schema = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approved", "rejected"]},
        "reviewer": {"type": ["string", "null"]},
        "note": {"type": ["string", "null"]},
        "edits": {"type": "object"},
        "decided_at": {"type": "string"},
        "tier": {"type": "integer"},
    },
    "additionalProperties": False,
}
ROUTE_OUTPUT: Schema = {
    "type": "object",
    "properties": {"route": {"type": ["string", "null"]}, "reason": {"type": "string"}},
    "additionalProperties": False,
}
STEP_RECORD_FIELDS: dict[str, Schema] = {
    "status": {"type": "string", "enum": ["completed", "skipped", "failed"]},
    "output": {},
    "error": {"type": ["object", "null"]},
    "attempts": {"type": "integer"},
    "cost_usd": {"type": "number"},
    "usage": {"type": "object"},
}
RUN_FIELDS: dict[str, Schema] = {
    "id": {"type": "string"},
    "workflow": {"type": "string"},
    "version": {"type": "integer"},
    "started_at": {"type": "string"},
    "tenant": {"type": "string"},
}
_OPEN_KEYWORDS = ("$ref", "anyOf", "oneOf", "allOf", "if", "not", "$dynamicRef")


def inline_output_schema(
    body: AgentBody | ToolBody | SubWorkflowBody, workflow: Workflow
) -> Schema:
    if body.output_schema is not None:
        return body.output_schema
    if isinstance(body, AgentBody):
        return TEXT_OUTPUT
    if isinstance(body, ToolBody):
        builtin = BUILTIN_TOOLS.get(body.tool)
        return builtin.output_schema if builtin is not None else {}
    return {}


def output_schema(step: Step, workflow: Workflow) -> Schema:
    """The JSON Schema of a step's output (`{}` when unknown)."""
    if isinstance(step, AgentBody | ToolBody | SubWorkflowBody):
        return inline_output_schema(step, workflow)
    if isinstance(step, HumanGateStep):
        return GATE_OUTPUT
    if isinstance(step, RuleRouter | ScoreRouter | LlmRouter):
        return ROUTE_OUTPUT
    if step.output_schema is not None:
        return step.output_schema
    inner = inline_output_schema(step.step, workflow)
    if isinstance(step, MapStep):
        return {"type": "array", "items": inner}
    return loop_output_schema(inner) if isinstance(step, LoopStep) else {}


def loop_output_schema(inner: Schema) -> Schema:
    """A loop's output: the last iteration's object plus `iterations`."""
    iterations = {"type": "integer"}
    if inner.get("type") == "object" and not any(k in inner for k in _OPEN_KEYWORDS):
        props = dict(inner.get("properties", {}))
        props["iterations"] = iterations
        return {**inner, "properties": props}
    if not inner:
        return {}
    return {
        "type": "object",
        "properties": {"value": inner, "iterations": iterations},
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Mismatch:
    """Why a path cannot exist in a schema."""

    prefix: tuple[str | int, ...]
    message: str
    hint: str = ""
    """What to do about it, said after where the mismatch comes from."""


def walk(schema: Schema, parts: tuple[str | int, ...]) -> tuple[Schema, Mismatch | None]:
    """Follow `parts` through `schema`: the schema found, or why the path cannot exist."""
    current = schema
    for depth, part in enumerate(parts):
        if not current or any(k in current for k in _OPEN_KEYWORDS):
            return {}, None
        types = _types(current)
        if isinstance(part, str):
            if types and "object" not in types:
                return {}, Mismatch(parts[:depth], f"is {_a(types)}, which has no field '{part}'")
            properties = current.get("properties", {})
            if part in properties:
                current = properties[part]
                continue
            extra = current.get("additionalProperties", True)
            if current.get("patternProperties"):
                return {}, None
            if extra is False:
                known = ", ".join(properties) or "none"
                return {}, Mismatch(parts[:depth], f"has no field '{part}' (its fields: {known})")
            if properties and "additionalProperties" not in current:
                # Declared properties are what a reader can rely on; saying
                # `additionalProperties: true` (or a schema) is the explicit escape.
                return {}, _undeclared(parts[:depth], part, list(properties))
            current = extra if isinstance(extra, dict) else {}
        else:
            if types and "array" not in types:
                return {}, Mismatch(parts[:depth], f"is {_a(types)}, which has no item [{part}]")
            prefix = current.get("prefixItems")
            if isinstance(prefix, list) and part < len(prefix):
                current = prefix[part]
            else:
                items = current.get("items", {})
                current = items if isinstance(items, dict) else {}
    return current, None


def _undeclared(prefix: tuple[str | int, ...], part: str, properties: list[str]) -> Mismatch:
    close = difflib.get_close_matches(part, properties, n=1)
    meant = f"did you mean '{close[0]}'? " if close else ""
    return Mismatch(
        prefix,
        f"declares no field '{part}' (its fields: {', '.join(properties)})",
        f"{meant}If other fields may be there, say so: additionalProperties: true",
    )


def json_types(schema: Schema) -> set[str] | None:
    """The JSON types a value of `schema` may have; None when unknown. integer counts as number."""
    if not schema or any(k in schema for k in _OPEN_KEYWORDS):
        return None
    types = _types(schema)
    if types:
        return {"number" if t == "integer" else t for t in types}
    if "enum" in schema and isinstance(schema["enum"], list):
        return {_json_type(v) for v in schema["enum"]}
    if "const" in schema:
        return {_json_type(schema["const"])}
    return None


def types_text(types: set[str]) -> str:
    """`a string`, `an array or string`: JSON types as a reader says them."""
    text = " or ".join(sorted(types))
    return f"an {text}" if text[:1] in "aeiou" else f"a {text}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _types(schema: Schema) -> list[str]:
    value = schema.get("type")
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _a(types: list[str]) -> str:
    text = " or ".join(types)
    return f"an {text}" if text[:1] in "aeiou" else f"a {text}"
