"""Find the tool a name refers to: a built-in, or one the workflow declares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from switchyard.contract.step_errors import PolicyViolationError
from switchyard.model import ToolDef
from switchyard.runtime.tools.aws_tools import (
    EmailSendTool,
    EventsPutTool,
    LambdaTool,
    S3GetTool,
    S3PutTool,
    SnsPublishTool,
    SqsSendTool,
)
from switchyard.runtime.tools.base import Tool
from switchyard.runtime.tools.http_tools import DeclaredHttpTool, HttpRequestTool
from switchyard.runtime.tools.misc_tools import PythonTool, SlackPostTool, SqlQueryTool

BUILTINS: dict[str, type[Any]] = {
    "http.request": HttpRequestTool,
    "sql.query": SqlQueryTool,
    "s3.get": S3GetTool,
    "s3.put": S3PutTool,
    "sqs.send": SqsSendTool,
    "sns.publish": SnsPublishTool,
    "events.put": EventsPutTool,
    "email.send": EmailSendTool,
    "slack.post": SlackPostTool,
}


def declared_tool(name: str, definition: ToolDef) -> Tool:
    side_effect = definition.effective_side_effect()
    if definition.kind == "http":
        return DeclaredHttpTool(
            name,
            definition.description,
            definition.input_schema,
            dict(definition.config),
            side_effect,
        )
    function = str(definition.config["function"])
    if definition.kind == "python":
        return PythonTool(
            name, definition.description, definition.input_schema, function, side_effect
        )
    return LambdaTool(name, definition.description, definition.input_schema, function, side_effect)


class ToolRegistry:
    """The tools one step can reach: the built-ins and its workflow's declared tools."""

    def __init__(
        self, definitions: Mapping[str, ToolDef | Mapping[str, Any]] | None = None
    ) -> None:
        self.definitions: dict[str, ToolDef] = {
            name: d if isinstance(d, ToolDef) else ToolDef.model_validate(d)
            for name, d in (definitions or {}).items()
        }

    def get(self, name: str) -> Tool:
        if name in self.definitions:
            return declared_tool(name, self.definitions[name])
        if name in BUILTINS:
            tool: Tool = BUILTINS[name]()
            return tool
        raise PolicyViolationError(f"there is no tool named {name!r}", tool=name)

    def definition(self, name: str) -> ToolDef | None:
        return self.definitions.get(name)
