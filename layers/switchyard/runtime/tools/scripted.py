"""A tool call answered from the run's script (`--llm-script`, `SWITCHYARD_LLM_SCRIPT`) instead of
the tool: the gateway checks, counts, keys and audits it exactly as the real call, which it stands
in for only at the last moment, where the tool would run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from switchyard.model import SideEffect
from switchyard.runtime.tools.base import CallInfo, Tool, ToolEnvironment
from switchyard.runtime.tools.registry import ToolRegistry


class ScriptedTool:
    """The real tool's name, schema and side effect; its invocation is the script's answer."""

    def __init__(self, tool: Tool, answer: Callable[[], Any]) -> None:
        self.tool = tool
        self.name = tool.name
        self.description = tool.description
        self.input_schema = tool.input_schema
        self._answer = answer

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return self.tool.side_effect(args)

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        return self._answer()


class ScriptedToolRegistry(ToolRegistry):
    """The step's tools, with `tool` answering from the script."""

    def __init__(self, registry: ToolRegistry, tool: str, answer: Callable[[], Any]) -> None:
        super().__init__(registry.definitions)
        self._tool = tool
        self._answer = answer

    def get(self, name: str) -> Tool:
        real = super().get(name)
        return ScriptedTool(real, self._answer) if name == self._tool else real
