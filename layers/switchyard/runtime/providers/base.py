"""One interface for every model provider: a request in, a response (or a `StepError`) out.

Messages, content blocks and tool definitions use the Anthropic Messages API shapes, since every
provider we have (Anthropic direct, Bedrock, scripted) speaks Claude; a provider that did not would
translate at its edge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from switchyard.contract import Usage
from switchyard.contract.step_errors import TransientError


@dataclass(frozen=True, slots=True)
class CallKey:
    """Which call this is, for providers that answer by position (scripted) and for logs.

    Everything in it comes from the invocation (never from a counter kept in memory), so the same
    call after a crash and a restart has the same key.
    """

    run_id: str
    step_id: str
    index: int | None = None
    iteration: int | None = None
    attempt: int = 1
    turn: int = 0


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_api(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    temperature: float | None = None
    timeout: float | None = None
    """Seconds this one HTTP call may take (the caller derives it from its deadline)."""
    key: CallKey | None = None


@dataclass(frozen=True, slots=True)
class ContentBlock:
    type: Literal["text", "tool_use"]
    text: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)

    def to_api(self) -> dict[str, Any]:
        if self.type == "text":
            return {"type": "text", "text": self.text}
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}

    @classmethod
    def from_api(cls, block: dict[str, Any]) -> ContentBlock:
        if block.get("type") == "tool_use":
            return cls("tool_use", id=block["id"], name=block["name"], input=block["input"])
        return cls("text", text=str(block.get("text", "")))


@dataclass(frozen=True, slots=True)
class ModelResponse:
    content: tuple[ContentBlock, ...]
    stop_reason: str
    usage: Usage
    """Tokens of this call, with `model` (the one that answered) and `provider` set."""
    structured: Any = None
    """An answer that is already data (scripted `output`/`route`); real providers leave it None."""

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if block.type == "text")

    @property
    def tool_uses(self) -> list[ContentBlock]:
        return [block for block in self.content if block.type == "tool_use"]

    def to_json(self) -> dict[str, Any]:
        return {
            "content": [block.to_api() for block in self.content],
            "stop_reason": self.stop_reason,
            "usage": self.usage.model_dump(mode="json"),
            "structured": self.structured,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelResponse:
        return cls(
            content=tuple(ContentBlock.from_api(b) for b in data["content"]),
            stop_reason=str(data["stop_reason"]),
            usage=Usage.model_validate(data["usage"]),
            structured=data.get("structured"),
        )


class ModelProvider(Protocol):
    """A model provider; `complete` raises `StepError`s, never SDK exceptions."""

    name: str

    def complete(self, request: ModelRequest) -> ModelResponse: ...


class ModelOverloadedError(TransientError):
    """The provider is overloaded or down for this model; another model may answer."""


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token) where no real count exists."""
    return max(1, (len(text) + 3) // 4)


def request_text(request: ModelRequest) -> str:
    """All the text a request sends, for token estimates."""
    parts = [request.system or ""]
    for message in request.messages:
        content = message.get("content")
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


def input_tokens(request: ModelRequest) -> int:
    """The input a request is charged for, estimated before it is sent: its text and its tools'
    definitions (the budget cap counts them; the settled cost uses the provider's count)."""
    tools = json.dumps([tool.to_api() for tool in request.tools]) if request.tools else ""
    return estimate_tokens(request_text(request) + tools)
