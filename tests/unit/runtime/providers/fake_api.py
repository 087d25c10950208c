"""A fake Claude HTTP endpoint for the real `anthropic` SDK (httpx2 MockTransport).

Both `Anthropic` (POST /v1/messages, model in the body) and `AnthropicBedrock`
(POST /model/<id>/invoke) are served; each test queues responses by model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx2

from switchyard.runtime.providers import AnthropicProvider, BedrockProvider, ModelProvider

Reply = Callable[[httpx2.Request], httpx2.Response]


def message(
    content: list[dict[str, Any]],
    *,
    model: str = "claude-sonnet-4-5",
    stop_reason: str = "end_turn",
    input_tokens: int = 120,
    output_tokens: int = 40,
    cache_read: int = 0,
    cache_write: int = 0,
) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
            "service_tier": "standard",
        },
    }


def text_message(text: str, **kwargs: Any) -> dict[str, Any]:
    return message([{"type": "text", "text": text}], **kwargs)


def error_body(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_011"}


def ok(body: dict[str, Any]) -> Reply:
    return lambda request: httpx2.Response(200, json=body, headers={"request-id": "req_1"})


def status(code: int, kind: str, text: str, headers: dict[str, str] | None = None) -> Reply:
    return lambda request: httpx2.Response(code, json=error_body(kind, text), headers=headers)


def connection_error() -> Reply:
    def reply(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    return reply


def read_timeout() -> Reply:
    def reply(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    return reply


@dataclass
class FakeClaude:
    """Queued replies per model id (the catalog id or the Bedrock id)."""

    replies: dict[str, list[Reply]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def queue(self, model: str, *replies: Reply) -> None:
        self.replies.setdefault(model, []).extend(replies)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        path = unquote(request.url.path)
        model = path.split("/")[2] if path.startswith("/model/") else body.get("model", "")
        self.requests.append((model, body))
        queue = self.replies.get(model)
        if not queue:
            return httpx2.Response(404, json=error_body("not_found_error", f"model: {model}"))
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        return reply(request)

    def http_client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handle))

    def provider(self, kind: str) -> ModelProvider:
        if kind == "anthropic":
            return AnthropicProvider(api_key="sk-ant-test", http_client=self.http_client())
        return BedrockProvider(
            region="us-east-1",
            aws_access_key="AKIDEXAMPLE",
            aws_secret_key="secret",
            base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
            http_client=self.http_client(),
        )


BEDROCK_IDS = {
    "claude-haiku-4-5": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    "claude-sonnet-4-5": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "claude-opus-4-5": "us.anthropic.claude-opus-4-5-20251101-v1:0",
}
"""From us-east-1, Claude 4.x is invoked through the `us.` inference profile."""


def wire_model(kind: str, model: str) -> str:
    """The id the fake sees for a catalog model through this provider."""
    return BEDROCK_IDS[model] if kind == "bedrock" else model
