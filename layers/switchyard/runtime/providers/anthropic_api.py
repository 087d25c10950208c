"""Claude through Anthropic's API, with an API key from the environment or Secrets Manager."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import anthropic

from switchyard.contract.step_errors import PermanentError
from switchyard.runtime.providers.base import ModelRequest, ModelResponse
from switchyard.runtime.providers.messages_api import create_message
from switchyard.runtime.settings import API_KEY_ENV, API_KEY_SECRET_ENV


def api_key_from_secret(secret_id: str, *, client: Any = None) -> str:
    """The API key stored in a Secrets Manager secret."""
    if client is None:
        import boto3  # type: ignore[import-untyped]

        client = boto3.client("secretsmanager")
    value = str(client.get_secret_value(SecretId=secret_id)["SecretString"]).strip()
    if value.startswith("{"):
        data = json.loads(value)
        for name in ("api_key", API_KEY_ENV):
            if isinstance(data.get(name), str):
                return str(data[name])
        raise PermanentError(f"secret {secret_id!r} has no api_key field")
    return value


class AnthropicProvider:
    """`anthropic.Anthropic` with the SDK's own retries off: retries belong to the workflow."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        secret_id: str | None = None,
        secrets_client: Any = None,
        base_url: str | None = None,
        http_client: Any = None,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self._client = client
        self._api_key = api_key
        self._secret_id = secret_id
        self._secrets_client = secrets_client
        self._base_url = base_url
        self._http_client = http_client
        self._lock = threading.Lock()

    def _resolve_key(self) -> str:
        if self._api_key:
            return self._api_key
        secret_id = self._secret_id or os.environ.get(API_KEY_SECRET_ENV)
        if secret_id:
            return api_key_from_secret(secret_id, client=self._secrets_client)
        key = os.environ.get(API_KEY_ENV)
        if key:
            return key
        raise PermanentError(
            f"no Anthropic API key: set {API_KEY_ENV}, or {API_KEY_SECRET_ENV} to a Secrets "
            "Manager secret holding it, or run with a scripted model (--llm-script)"
        )

    @property
    def client(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                self._client = anthropic.Anthropic(
                    api_key=self._resolve_key(),
                    base_url=self._base_url,
                    http_client=self._http_client,
                    max_retries=0,
                )
            return self._client

    def complete(self, request: ModelRequest) -> ModelResponse:
        return create_message(
            self.client.messages, request, api_model=request.model, provider=self.name
        )
