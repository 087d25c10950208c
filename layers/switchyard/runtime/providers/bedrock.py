"""Claude through Amazon Bedrock (`AnthropicBedrock`), authenticated by the IAM role."""

from __future__ import annotations

import os
import threading
from typing import Any

import anthropic

from switchyard.runtime.models_catalog import ModelCatalog, default_catalog
from switchyard.runtime.providers.base import ModelRequest, ModelResponse
from switchyard.runtime.providers.messages_api import create_message


class BedrockProvider:
    """Model ids map to what Bedrock serves through the catalog: the inference profile for the
    provider's region (`us.anthropic.claude-sonnet-4-5-...` from us-east-1)."""

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
                    aws_region=self.region,
                    aws_access_key=access,
                    aws_secret_key=secret,
                    aws_session_token=token,
                    base_url=self._base_url,
                    http_client=self._http_client,
                    max_retries=0,
                )
            return self._client

    @property
    def region(self) -> str:
        """The region calls go to: the one given, else `AWS_REGION` (Lambda sets it), else
        `AWS_DEFAULT_REGION`, else us-east-1 (as `AnthropicBedrock` does)."""
        return (
            self._region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )

    def bedrock_id(self, model: str) -> str:
        """What Bedrock is asked for: a catalog model's inference profile for this region (or
        its foundation model id when it has no profile); ids that already look like Bedrock's
        pass."""
        catalog = self._catalog or default_catalog()
        if model in catalog:
            return catalog.get(model).bedrock_model_id(self.region)
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
