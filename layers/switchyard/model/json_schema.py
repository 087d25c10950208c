"""The JSON Schema of the workflow format, for editors (`switchyard schema`).

Put `# yaml-language-server: $schema=<path or URL of this schema>` at the top of a workflow file
and the YAML language server (VS Code, Neovim, JetBrains) completes keys and flags mistakes.
"""

from __future__ import annotations

from typing import Any

from switchyard.model.workflow import Workflow

SCHEMA_ID = "https://switchyard.dev/schema/workflow-1.json"


def workflow_json_schema() -> dict[str, Any]:
    """Draft 2020-12 schema of a workflow file, in the subset editors understand."""
    schema = _for_editors(Workflow.model_json_schema(mode="validation"))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "switchyard workflow (format version 1)",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def _for_editors(node: Any) -> Any:
    """Drop OpenAPI's `discriminator` (not JSON Schema) and close id-keyed mappings."""
    if isinstance(node, list):
        return [_for_editors(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _for_editors(value) for key, value in node.items() if key != "discriminator"}
    if "patternProperties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out
