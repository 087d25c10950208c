"""What the Anthropic and Bedrock providers share: one Messages API call and its translation."""

from __future__ import annotations

from typing import Any

import anthropic

from switchyard.contract import Usage
from switchyard.runtime.providers.base import ContentBlock, ModelRequest, ModelResponse
from switchyard.runtime.providers.sdk_errors import map_sdk_error

DEFAULT_CALL_TIMEOUT = 600.0


def create_message(
    messages_api: Any, request: ModelRequest, *, api_model: str, provider: str
) -> ModelResponse:
    """Call `messages.create` on an SDK client; SDK exceptions leave as `StepError`s."""
    kwargs: dict[str, Any] = {
        "model": api_model,
        "max_tokens": request.max_tokens,
        "messages": request.messages,
        # An explicit timeout also stops the SDK refusing large max_tokens without streaming.
        "timeout": request.timeout if request.timeout is not None else DEFAULT_CALL_TIMEOUT,
    }
    if request.system:
        kwargs["system"] = request.system
    if request.tools:
        kwargs["tools"] = [tool.to_api() for tool in request.tools]
    if request.temperature is not None:
        # This SDK version no longer types `temperature`; the Messages API still takes it.
        kwargs["extra_body"] = {"temperature": request.temperature}
    try:
        message = messages_api.create(**kwargs)
    except anthropic.AnthropicError as exc:
        raise map_sdk_error(exc, provider=provider, model=request.model) from exc
    return to_response(message, model=request.model, provider=provider)


def to_response(message: Any, *, model: str, provider: str) -> ModelResponse:
    """Our response from the SDK's `Message` (thinking and server-tool blocks are dropped)."""
    blocks: list[ContentBlock] = []
    for block in message.content:
        if block.type == "text":
            blocks.append(ContentBlock("text", text=block.text))
        elif block.type == "tool_use":
            blocks.append(
                ContentBlock("tool_use", id=block.id, name=block.name, input=dict(block.input))
            )
    usage = message.usage
    return ModelResponse(
        content=tuple(blocks),
        stop_reason=str(message.stop_reason or "end_turn"),
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            model=model,
            provider=provider,
        ),
    )
