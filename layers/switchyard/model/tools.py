"""Named tools that agent and tool steps may use, with their policies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from switchyard.model.base import ConditionText, SideEffect, Spec


class ToolPolicy(Spec):
    """Checks made before every call of the tool."""

    max_calls_per_run: int | None = Field(default=None, ge=1)
    require_approval_if: ConditionText | None = None
    """Condition over `args`; when true the call waits for a human, who may edit the arguments."""


class ToolDef(Spec):
    """A tool declared in the workflow's `tools` section."""

    description: str
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON Schema of the arguments; checked before every call."""
    kind: Literal["http", "python", "lambda"]
    config: dict[str, Any] = Field(default_factory=dict)
    """http: method, url, headers, timeout (templates over `args`); python and lambda: function."""
    side_effect: SideEffect | None = None
    """Default: none for an http GET, idempotent otherwise."""
    policy: ToolPolicy = Field(default_factory=ToolPolicy)

    @model_validator(mode="after")
    def _config_matches_kind(self) -> ToolDef:
        if self.kind == "http" and "url" not in self.config:
            raise ValueError("an http tool needs config.url")
        if self.kind in ("python", "lambda") and not isinstance(self.config.get("function"), str):
            where = "module:function" if self.kind == "python" else "a function name or ARN"
            raise ValueError(f"a {self.kind} tool needs config.function ({where})")
        if self.kind == "python" and ":" not in self.config["function"]:
            raise ValueError("config.function of a python tool is written module:function")
        return self

    def effective_side_effect(self) -> SideEffect:
        if self.side_effect is not None:
            return self.side_effect
        method = str(self.config.get("method", "GET")).upper()
        return SideEffect.NONE if self.kind == "http" and method == "GET" else SideEffect.IDEMPOTENT
