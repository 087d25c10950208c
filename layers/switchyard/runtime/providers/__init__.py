"""Model providers behind one interface: Anthropic's API, Bedrock, and scripted answers.

`AnthropicProvider` and `BedrockProvider` load on first use: the `anthropic` SDK takes about
a second to import, and the CLI and the engine only need it when a step really calls a model.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from switchyard.contract.step_errors import PermanentError
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
from switchyard.runtime.settings import (
    API_KEY_ENV,
    API_KEY_SECRET_ENV,
    DEFAULT_PROVIDER_ENV,
    LLM_SCRIPT_ENV,
)

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


_SHARED: dict[tuple[str | None, ...], ModelProvider] = {}
_SHARED_LOCK = threading.Lock()


def provider_from_env(name: str | None = None) -> ModelProvider:
    """The provider a step uses: a script when `SWITCHYARD_LLM_SCRIPT` is set, else by name.

    An `anthropic` or `bedrock` provider is made once per process and configuration, and shared
    by every step and thread: its SDK client (and its connection pool) is built once, and the
    API key is read from Secrets Manager once, not on every attempt."""
    scripted = ScriptedProvider.from_env()
    if scripted is not None:
        return scripted
    chosen = name or os.environ.get(DEFAULT_PROVIDER_ENV, "anthropic")
    if chosen not in ("anthropic", "bedrock"):
        raise PermanentError(f"unknown model provider {chosen!r}: use anthropic or bedrock")
    key = _configuration(chosen)
    with _SHARED_LOCK:
        provider = _SHARED.get(key)
        if provider is None:
            provider = _SHARED[key] = _new_provider(chosen)
        return provider


def _configuration(chosen: str) -> tuple[str | None, ...]:
    """What the environment says about the provider: another value, another provider."""
    if chosen == "anthropic":
        return (chosen, os.environ.get(API_KEY_SECRET_ENV), os.environ.get(API_KEY_ENV))
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return (chosen, region)


def _new_provider(chosen: str) -> ModelProvider:
    if chosen == "anthropic":
        from switchyard.runtime.providers.anthropic_api import AnthropicProvider

        return AnthropicProvider()
    from switchyard.runtime.providers.bedrock import BedrockProvider

    return BedrockProvider()


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
