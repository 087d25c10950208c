"""Anthropic and Bedrock through the real SDK against a mocked HTTP transport."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import (
    PermanentError,
    RateLimitedError,
    StepError,
    StepTimeoutError,
    TransientError,
)
from switchyard.runtime.clock import Deadline, ManualClock
from switchyard.runtime.providers import (
    AnthropicProvider,
    BedrockProvider,
    CallKey,
    ModelOverloadedError,
    ModelRequest,
    ToolSpec,
    call_model,
)
from switchyard.runtime.rate_limits import RateLimitGate
from tests.unit.runtime.providers.fake_api import (
    FakeClaude,
    connection_error,
    message,
    ok,
    read_timeout,
    status,
    text_message,
    wire_model,
)

KINDS = ["anthropic", "bedrock"]
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def request(model: str = "claude-sonnet-4-5", **kwargs: object) -> ModelRequest:
    return ModelRequest(
        model=model,
        messages=[{"role": "user", "content": "Classify: my invoice is wrong"}],
        max_tokens=1024,
        system="You are a classifier.",
        key=CallKey("run-1", "classify"),
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("kind", KINDS)
def test_usage_with_cache_tokens_is_recorded(kind: str) -> None:
    fake = FakeClaude()
    fake.queue(
        wire_model(kind, "claude-sonnet-4-5"),
        ok(
            text_message(
                "billing", input_tokens=35, output_tokens=4, cache_read=2048, cache_write=10
            )
        ),
    )
    response = fake.provider(kind).complete(request(temperature=0.2))
    assert response.text == "billing"
    assert response.stop_reason == "end_turn"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (35, 4, 2048)
    assert usage.model_extra == {"cache_write_tokens": 10}
    assert usage.model == "claude-sonnet-4-5" and usage.provider == kind
    _, body = fake.requests[0]
    assert body["system"] == "You are a classifier."
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 1024


@pytest.mark.parametrize("kind", KINDS)
def test_tool_use_turn_is_returned_as_blocks(kind: str) -> None:
    fake = FakeClaude()
    fake.queue(
        wire_model(kind, "claude-sonnet-4-5"),
        ok(
            message(
                [
                    {"type": "text", "text": "Let me look that up."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01A09q90qw90lq917835lq9",
                        "name": "lookup_order",
                        "input": {"order_id": "A-17"},
                    },
                ],
                stop_reason="tool_use",
            )
        ),
    )
    tool = ToolSpec("lookup_order", "Look up an order.", {"type": "object"})
    response = fake.provider(kind).complete(request(tools=(tool,)))
    assert response.stop_reason == "tool_use"
    [use] = response.tool_uses
    assert (use.id, use.name, use.input) == (
        "toolu_01A09q90qw90lq917835lq9",
        "lookup_order",
        {"order_id": "A-17"},
    )
    assert fake.requests[0][1]["tools"] == [tool.to_api()]


@pytest.mark.parametrize("kind", KINDS)
def test_429_is_rate_limit_with_retry_after_and_blocks_the_model_account_wide(kind: str) -> None:
    fake = FakeClaude()
    model = wire_model(kind, "claude-sonnet-4-5")
    fake.queue(
        model,
        status(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            {"retry-after": "20"},
        ),
        ok(text_message("fine")),
    )
    clock = ManualClock()
    gate = RateLimitGate(clock=clock)
    provider = fake.provider(kind)
    with pytest.raises(RateLimitedError) as info:
        call_model(provider, request(), gate=gate, deadline=Deadline.after(300, clock))
    assert info.value.retry_after == 20.0
    assert info.value.name is StepErrorName.RATE_LIMIT and info.value.retryable
    assert info.value.cause()["retry_after"] == 20.0

    # A call with too little time left fails fast instead of sleeping past its deadline.
    with pytest.raises(RateLimitedError) as fast:
        call_model(provider, request(), gate=gate, deadline=Deadline.after(10, clock))
    assert fast.value.retry_after == pytest.approx(20.0)
    assert clock.sleeps == []
    assert len(fake.requests) == 1

    # A call with room waits out the Retry-After, then succeeds.
    response = call_model(provider, request(), gate=gate, deadline=Deadline.after(300, clock))
    assert response.text == "fine"
    assert clock.sleeps == [pytest.approx(20.0)]


@pytest.mark.parametrize("kind", KINDS)
def test_529_overload_falls_back_to_the_next_model(kind: str) -> None:
    fake = FakeClaude()
    fake.queue(
        wire_model(kind, "claude-opus-4-5"), status(529, "overloaded_error", "ModelOverloadedError")
    )
    fake.queue(
        wire_model(kind, "claude-sonnet-4-5"),
        status(529, "overloaded_error", "ModelOverloadedError"),
    )
    fake.queue(
        wire_model(kind, "claude-haiku-4-5"),
        ok(text_message("from haiku", model="claude-haiku-4-5")),
    )
    response = call_model(
        fake.provider(kind),
        request("claude-opus-4-5"),
        fallback_models=["claude-sonnet-4-5", "claude-haiku-4-5"],
    )
    assert response.text == "from haiku"
    assert response.usage.model == "claude-haiku-4-5"
    assert [m for m, _ in fake.requests] == [
        wire_model(kind, m) for m in ("claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5")
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_overload_without_an_answering_fallback_is_transient(kind: str) -> None:
    fake = FakeClaude()
    fake.queue(
        wire_model(kind, "claude-opus-4-5"), status(529, "overloaded_error", "ModelOverloadedError")
    )
    fake.queue(wire_model(kind, "claude-haiku-4-5"), status(503, "api_error", "unavailable"))
    with pytest.raises(ModelOverloadedError) as info:
        call_model(
            fake.provider(kind), request("claude-opus-4-5"), fallback_models=["claude-haiku-4-5"]
        )
    assert info.value.name is StepErrorName.TRANSIENT


@pytest.mark.parametrize("kind", KINDS)
def test_context_length_400_is_permanent(kind: str) -> None:
    fake = FakeClaude()
    fake.queue(
        wire_model(kind, "claude-sonnet-4-5"),
        status(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"),
    )
    with pytest.raises(PermanentError, match="context window") as info:
        call_model(fake.provider(kind), request(), fallback_models=["claude-haiku-4-5"])
    assert info.value.name is StepErrorName.PERMANENT and not info.value.retryable
    assert len(fake.requests) == 1  # a 4xx never tries the fallback models


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (connection_error(), TransientError),
        (read_timeout(), StepTimeoutError),
        (status(408, "timeout_error", "Request timed out"), StepTimeoutError),
        (status(500, "api_error", "Internal server error"), TransientError),
        (status(401, "authentication_error", "invalid x-api-key"), PermanentError),
        (status(404, "not_found_error", "model: nope"), PermanentError),
    ],
)
def test_error_mapping(kind: str, reply: object, expected: type[StepError]) -> None:
    fake = FakeClaude()
    fake.queue(wire_model(kind, "claude-sonnet-4-5"), reply)  # type: ignore[arg-type]
    with pytest.raises(expected):
        fake.provider(kind).complete(request())


def test_api_key_from_secrets_manager() -> None:
    fake = FakeClaude()
    fake.queue("claude-sonnet-4-5", ok(text_message("ok")))
    seen: list[str] = []
    original = fake.handle

    def handle(req):  # type: ignore[no-untyped-def]
        seen.append(req.headers.get("authorization") or req.headers.get("x-api-key"))
        return original(req)

    fake.handle = handle  # type: ignore[method-assign]
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        secrets.create_secret(
            Name="switchyard/anthropic", SecretString=json.dumps({"api_key": "sk-from-secret"})
        )
        provider = AnthropicProvider(
            secret_id="switchyard/anthropic", secrets_client=secrets, http_client=fake.http_client()
        )
        assert provider.complete(request()).text == "ok"
    assert "sk-from-secret" in seen[0]


def test_missing_api_key_says_how_to_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("SWITCHYARD_ANTHROPIC_SECRET", raising=False)
    with pytest.raises(PermanentError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider().complete(request())


def test_bedrock_refuses_a_model_it_cannot_name() -> None:
    with pytest.raises(PermanentError, match="no price"):
        BedrockProvider(region="us-east-1").bedrock_id("gpt-4")
    assert BedrockProvider(region="us-east-1").bedrock_id("claude-opus-4-5") == (
        "us.anthropic.claude-opus-4-5-20251101-v1:0"
    )


@pytest.mark.parametrize(
    ("region", "model", "expected"),
    [
        ("us-west-2", "claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("eu-central-1", "claude-sonnet-4-5", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("ap-northeast-1", "claude-haiku-4-5", "jp.anthropic.claude-haiku-4-5-20251001-v1:0"),
        ("ap-southeast-2", "claude-sonnet-4-5", "au.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("ap-south-1", "claude-sonnet-4-20250514", "apac.anthropic.claude-sonnet-4-20250514-v1:0"),
        ("ap-south-1", "claude-opus-4-5", "global.anthropic.claude-opus-4-5-20251101-v1:0"),
        ("sa-east-1", "claude-sonnet-4-5", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("us-gov-west-1", "claude-sonnet-4-5", "us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        (
            "us-gov-east-1",
            "claude-3-7-sonnet-20250219",
            "us-gov.anthropic.claude-3-7-sonnet-20250219-v1:0",
        ),
        ("us-east-1", "anthropic.claude-v2", "anthropic.claude-v2"),
    ],
)
def test_bedrock_invokes_the_inference_profile_of_its_region(
    region: str, model: str, expected: str
) -> None:
    assert BedrockProvider(region=region).bedrock_id(model) == expected


def test_bedrock_region_comes_from_lambdas_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert BedrockProvider().bedrock_id("claude-haiku-4-5").startswith("eu.")


def test_a_model_without_a_profile_for_the_region_says_which_it_has() -> None:
    with pytest.raises(PermanentError, match=r"us.*inference-profiles-support"):
        BedrockProvider(region="eu-west-1").bedrock_id("claude-opus-4-1")


def test_a_process_builds_one_anthropic_client_and_reads_its_key_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every attempt of every step used to build a client and fetch the key from Secrets Manager
    again; now the provider, its client and the key are made once per process and shared."""
    import threading

    from switchyard.runtime.providers import provider_from_env

    monkeypatch.delenv("SWITCHYARD_LLM_SCRIPT", raising=False)
    monkeypatch.delenv("SWITCHYARD_PROVIDER", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    secret = f"switchyard/anthropic-{id(monkeypatch)}"
    monkeypatch.setenv("SWITCHYARD_ANTHROPIC_SECRET", secret)
    with mock_aws():
        boto3.client("secretsmanager").create_secret(Name=secret, SecretString="sk-first")
        barrier = threading.Barrier(8)
        providers: list[object] = []

        def first_call() -> None:
            barrier.wait()
            providers.append(provider_from_env())

        threads = [threading.Thread(target=first_call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({id(p) for p in providers}) == 1
        provider = providers[0]
        assert isinstance(provider, AnthropicProvider)
        client = provider.client
        assert client.api_key == "sk-first"
        # The secret changes: a process that already read it keeps its client, key and pool.
        boto3.client("secretsmanager").put_secret_value(SecretId=secret, SecretString="sk-new")
        again = provider_from_env("anthropic")
        assert again is provider and again.client is client  # type: ignore[attr-defined]
        assert client.api_key == "sk-first"

    # Another configuration is another provider.
    monkeypatch.delenv("SWITCHYARD_ANTHROPIC_SECRET")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    other = provider_from_env()
    assert other is not provider
    assert other.client.api_key == "sk-env"  # type: ignore[attr-defined]
