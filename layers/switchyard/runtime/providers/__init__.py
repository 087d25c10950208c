"""Model providers behind one interface: Anthropic's API, Bedrock, and scripted answers.

`AnthropicProvider` and `BedrockProvider` load on first use: the `anthropic` SDK takes about
a second to import, and the CLI and the engine only need it when a step really calls a model.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from switchyard.runtime.errors import PermanentError
from switchyard.runtime.providers.base import (
    CallKey,
    ContentBlock,
    ModelOverloadedError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolSpec,
)
from switchyard.runtime.providers.calls import call_model
from switchyard.runtime.providers.scripted import ScriptedProvider, load_script
from switchyard.runtime.settings import DEFAULT_PROVIDER_ENV, LLM_SCRIPT_ENV

if TYPE_CHECKING:
    from switchyard.runtime.providers.anthropic_api import AnthropicProvider
    from switchyard.runtime.providers.bedrock import BedrockProvider


def __getattr__(name: str) -> Any:
    if name == "AnthropicProvider":
        from switchyard.runtime.providers.anthropic_api import AnthropicProvider

        return AnthropicProvider
    if name == "BedrockProvider":
        from switchyard.runtime.providers.bedrock import BedrockProvider

        return BedrockProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def provider_from_env(name: str | None = None) -> ModelProvider:
    """The provider a step uses: a script when `SWITCHYARD_LLM_SCRIPT` is set, else by name."""
    scripted = ScriptedProvider.from_env()
    if scripted is not None:
        return scripted
    chosen = name or os.environ.get(DEFAULT_PROVIDER_ENV, "anthropic")
    if chosen == "anthropic":
        from switchyard.runtime.providers.anthropic_api import AnthropicProvider

        return AnthropicProvider()
    if chosen == "bedrock":
        from switchyard.runtime.providers.bedrock import BedrockProvider

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
