"""Claude through Amazon Bedrock (`AnthropicBedrock`), authenticated by the IAM role."""

from __future__ import annotations

import threading
from typing import Any

import anthropic

from switchyard.runtime.models_catalog import ModelCatalog, UnknownModelError, default_catalog
from switchyard.runtime.providers.base import ModelRequest, ModelResponse
from switchyard.runtime.providers.messages_api import create_message


class BedrockProvider:
    """Model ids map to Bedrock ids through the catalog (`bedrock_id`)."""

    name = "bedrock"

    def __init__(
        self,
        *,
        region: str | None = None,
        base_url: str | None = None,
        http_client: Any = None,
        catalog: ModelCatalog | None = None,
        client: anthropic.AnthropicBedrock | None = None,
        aws_access_key: str | None = None,
        aws_secret_key: str | None = None,
        aws_session_token: str | None = None,
    ) -> None:
        self._client = client
        self._region = region
        self._base_url = base_url
        self._http_client = http_client
        self._catalog = catalog
        self._credentials = (aws_access_key, aws_secret_key, aws_session_token)
        self._lock = threading.Lock()

    @property
    def client(self) -> anthropic.AnthropicBedrock:
        with self._lock:
            if self._client is None:
                access, secret, token = self._credentials
                self._client = anthropic.AnthropicBedrock(
                    aws_region=self._region,
                    aws_access_key=access,
                    aws_secret_key=secret,
                    aws_session_token=token,
                    base_url=self._base_url,
                    http_client=self._http_client,
                    max_retries=0,
                )
            return self._client

    def bedrock_id(self, model: str) -> str:
        """The Bedrock id of a catalog model; ids that already look like Bedrock's pass."""
        catalog = self._catalog or default_catalog()
        if model in catalog:
            info = catalog.get(model)
            if info.bedrock_id:
                return info.bedrock_id
            raise UnknownModelError(f"model {model!r} has no bedrock_id in the model catalog")
        if "anthropic." in model:
            return model
        catalog.get(model)  # raises UnknownModelError with the list of known models
        return model

    def complete(self, request: ModelRequest) -> ModelResponse:
        return create_message(
            self.client.messages,
            request,
            api_model=self.bedrock_id(request.model),
            provider=self.name,
        )
