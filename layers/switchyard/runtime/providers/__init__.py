"""Model providers behind one interface: Anthropic's API, Bedrock, and scripted answers."""

from __future__ import annotations

import os

from switchyard.runtime.errors import PermanentError
from switchyard.runtime.providers.anthropic_api import AnthropicProvider
from switchyard.runtime.providers.base import (
    CallKey,
    ContentBlock,
    ModelOverloadedError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolSpec,
)
from switchyard.runtime.providers.bedrock import BedrockProvider
from switchyard.runtime.providers.calls import call_model
from switchyard.runtime.providers.scripted import ScriptedProvider, load_script
from switchyard.runtime.settings import DEFAULT_PROVIDER_ENV, LLM_SCRIPT_ENV


def provider_from_env(name: str | None = None) -> ModelProvider:
    """The provider a step uses: a script when `SWITCHYARD_LLM_SCRIPT` is set, else by name."""
    scripted = ScriptedProvider.from_env()
    if scripted is not None:
        return scripted
    chosen = name or os.environ.get(DEFAULT_PROVIDER_ENV, "anthropic")
    if chosen == "anthropic":
        return AnthropicProvider()
    if chosen == "bedrock":
        return BedrockProvider()
    raise PermanentError(f"unknown model provider {chosen!r}: use anthropic or bedrock")


__all__ = [
    "DEFAULT_PROVIDER_ENV",
    "LLM_SCRIPT_ENV",
    "AnthropicProvider",
    "BedrockProvider",
    "CallKey",
    "ContentBlock",
    "ModelOverloadedError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ScriptedProvider",
    "ToolSpec",
    "call_model",
    "load_script",
    "provider_from_env",
]
