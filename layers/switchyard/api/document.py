"""The OpenAPI 3.1 document at `/openapi.json`: FastAPI's, generated from the routes and the
pydantic models they validate with, and completed with what FastAPI cannot know:

- `HoldableJson`, the JSON this API can store (no NUL, no lone surrogate), where bodies take
  arbitrary JSON;
- one concrete `POST /workflows/<name>/runs` per installed workflow, whose body is that
  workflow's `inputs` as a JSON Schema and whose `X-Switchyard-LLM-Script` names the scripts the
  server has, required when the server could not call a model, in place of the templated
  `/workflows/{name}/runs` (whose body schema could not say what each workflow takes);
- the bearer token as a security scheme when the server has one;
- no `422` answers (FastAPI documents them; this API answers `400`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from switchyard.api.auth import BearerToken
from switchyard.api.models import HOLDABLE_JSON_SCHEMA, HOLDABLE_MARK, NO_NUL
from switchyard.api.runs import LLM_SCRIPT_HEADER
from switchyard.local.model_access import has_model_credentials, needs_model

if TYPE_CHECKING:
    from switchyard.api.catalog import CatalogEntry
    from switchyard.api.context import ApiContext

_RUNS = "/workflows/{name}/runs"
_HOLDABLE_REF = "#/components/schemas/HoldableJson"


def openapi_document(
    app: FastAPI, context: ApiContext, bearer: BearerToken
) -> Callable[[], dict[str, Any]]:
    """`app.openapi`: the document, built once (the routes and workflows are fixed at start)."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                openapi_version="3.1.0",
                description="switchyard's REST API (docs/api.md). Every error is"
                ' `{"error": {"code", "message"}}`.',
                routes=app.routes,
            )
            _drop_unused_validation_answers(document)
            document.setdefault("components", {}).setdefault("schemas", {})["HoldableJson"] = (
                HOLDABLE_JSON_SCHEMA
            )
            _refer_holdable(document)
            _workflow_paths(document, context)
            if bearer.required:
                document["components"]["securitySchemes"] = {
                    "bearer": {"type": "http", "scheme": "bearer"}
                }
                document["security"] = [{"bearer": []}]
            app.openapi_schema = document
        return app.openapi_schema

    return build


def _workflow_paths(document: dict[str, Any], context: ApiContext) -> None:
    generic = document["paths"].get(_RUNS, {}).get("post")
    if generic is None:
        return
    latest = {entry.name: entry for entry in context.catalog.entries()}  # sorted: latest last
    if not latest:
        return
    # the templated path would document, for installed names, bodies the workflow refuses
    del document["paths"][_RUNS]
    scripts = context.scripts.names() if context.scripts is not None else []
    for name, entry in latest.items():
        operation = copy.deepcopy(generic)
        operation["operationId"] = f"start_run_{_identifier(name)}"
        operation["summary"] = f"Start a run of {name}"
        operation["parameters"] = [
            _script_header(parameter, entry, scripts) if _is_script(parameter) else parameter
            for parameter in operation["parameters"]
            if not (parameter["in"] == "path" and parameter["name"] == "name")
        ]
        schema = _input_schema(entry)
        operation["requestBody"] = {
            "required": bool(schema["required"]),
            "content": {"application/json": {"schema": schema}},
        }
        document["paths"][f"/workflows/{name}/runs"] = {"post": operation}


def _is_script(parameter: dict[str, Any]) -> bool:
    return bool(parameter["in"] == "header" and parameter["name"] == LLM_SCRIPT_HEADER)


def _script_header(
    parameter: dict[str, Any], entry: CatalogEntry, scripts: list[str]
) -> dict[str, Any]:
    required = needs_model([entry.installed.workflow]) and not has_model_credentials()
    return {
        **parameter,
        "required": required,
        "schema": {"type": "string", "enum": scripts} if scripts else {"type": "string"},
    }


def _input_schema(entry: CatalogEntry) -> dict[str, Any]:
    inputs: dict[str, dict[str, Any]] = entry.installed.workflow.inputs
    return {
        "type": "object",
        "description": entry.installed.workflow.description or f"The input of {entry.name}.",
        "properties": {name: _holdable(schema) for name, schema in inputs.items()},
        "required": sorted(name for name, schema in inputs.items() if "default" not in schema),
        "additionalProperties": False,
    }


def _holdable(schema: dict[str, Any]) -> dict[str, Any]:
    """A workflow's input schema, whose strings PostgreSQL can store (no NUL)."""
    schema = copy.deepcopy(schema)
    stack = [schema]
    while stack:
        node = stack.pop()
        if node.get("type") == "string" and "pattern" not in node and "enum" not in node:
            node["pattern"] = NO_NUL
        for key in ("properties", "$defs"):
            stack.extend(v for v in node.get(key, {}).values() if isinstance(v, dict))
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                stack.append(node[key])
        for key in ("anyOf", "oneOf", "allOf"):
            stack.extend(v for v in node.get(key, []) if isinstance(v, dict))
    if "type" not in schema and "enum" not in schema and "const" not in schema:
        return {"allOf": [schema, {"$ref": _HOLDABLE_REF}]}
    return schema


def _identifier(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _drop_unused_validation_answers(document: dict[str, Any]) -> None:
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


def _refer_holdable(node: Any) -> None:
    """Each `{HOLDABLE_MARK: true}` of the models' schemas becomes the reference it stands for."""
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        if isinstance(child, dict) and child.get(HOLDABLE_MARK) is True:
            child.clear()
            child["$ref"] = _HOLDABLE_REF
        else:
            _refer_holdable(child)
