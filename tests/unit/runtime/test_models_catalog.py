"""Prices per million tokens, overrides from a file, exact cost in Decimal."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from switchyard.contract import Usage
from switchyard.runtime.models_catalog import (
    MODEL_PRICES_ENV,
    ModelCatalog,
    UnknownModelError,
    cost_usd,
    default_catalog,
    load_catalog,
    to_micros,
)


@pytest.mark.parametrize(
    ("model", "input_price", "output_price"),
    [
        ("claude-haiku-4-5", "1", "5"),
        ("claude-sonnet-4-5", "3", "15"),
        ("claude-opus-4-5", "5", "25"),
        ("claude-opus-4-1", "15", "75"),
        ("claude-sonnet-4-20250514", "3", "15"),
        ("claude-3-5-haiku-20241022", "0.80", "4"),
    ],
)
def test_published_prices(model: str, input_price: str, output_price: str) -> None:
    info = ModelCatalog().get(model)
    assert info.input == Decimal(input_price)
    assert info.output == Decimal(output_price)
    assert info.cache_read == Decimal(input_price) / 10
    assert info.bedrock_id is not None and info.bedrock_id.startswith("anthropic.")


def test_cost_counts_input_output_cache_read_and_cache_write() -> None:
    usage = Usage(
        input_tokens=1_000,
        output_tokens=500,
        cache_read_tokens=10_000,
        model="claude-sonnet-4-5",
        cache_write_tokens=2_000,
    )
    # 1000*3 + 500*15 + 10000*0.3 + 2000*3.75 = 3000 + 7500 + 3000 + 7500 = 21000 per million
    assert cost_usd(usage, ModelCatalog()) == Decimal("0.021")


def test_aliases_resolve_to_the_same_prices() -> None:
    catalog = ModelCatalog()
    assert catalog.get("claude-haiku-4-5-20251001") is catalog.get("claude-haiku-4-5")


def test_unknown_model_is_a_permanent_error_that_says_how_to_fix_it() -> None:
    with pytest.raises(UnknownModelError, match=MODEL_PRICES_ENV):
        ModelCatalog().get("gpt-4")


def test_prices_file_overrides_and_adds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    yaml_file = tmp_path / "prices.yaml"
    yaml_file.write_text(
        "claude-haiku-4-5: {input: 2, output: 10}\n"
        "my-model: {input: 1.5, output: 6, bedrock_id: 'anthropic.my-model-v1:0'}\n"
    )
    catalog = load_catalog(yaml_file)
    assert catalog.get("claude-haiku-4-5").input == Decimal(2)
    assert catalog.get("claude-haiku-4-5").cache_read == Decimal("0.2")
    assert catalog.get("my-model").bedrock_id == "anthropic.my-model-v1:0"
    assert catalog.get("my-model").bedrock_model_id("us-east-1") == "anthropic.my-model-v1:0"

    assert catalog.get("claude-opus-4-5").input == Decimal(5)

    json_file = tmp_path / "prices.json"
    json_file.write_text(json.dumps({"claude-opus-4-5": {"output": 30}}))
    monkeypatch.setenv(MODEL_PRICES_ENV, str(json_file))
    assert default_catalog().get("claude-opus-4-5").output == Decimal(30)


def test_micros_round_up() -> None:
    assert to_micros(Decimal("0.0000001")) == 1
    assert to_micros(Decimal("1.00")) == 1_000_000
    assert to_micros("0.1") == 100_000


def test_profiles_and_profile_ids_can_be_set_in_the_prices_file() -> None:
    catalog = ModelCatalog().with_overrides(
        {
            "my-model": {"input": 1, "output": 2, "bedrock_id": "anthropic.m-v1:0"},
            "claude-opus-4-1": {"bedrock_profiles": ["us", "eu"]},
            "claude-sonnet-4-5": {"bedrock_id": "global.anthropic.claude-sonnet-4-5-v9:0"},
        }
    )
    assert catalog.get("my-model").bedrock_model_id("eu-west-1") == "anthropic.m-v1:0"
    assert catalog.get("claude-opus-4-1").bedrock_model_id("eu-west-1").startswith("eu.")
    assert catalog.get("claude-sonnet-4-5").bedrock_model_id("us-east-1") == (
        "global.anthropic.claude-sonnet-4-5-v9:0"
    )
    with pytest.raises(ValueError, match="bedrock_profiles"):
        ModelCatalog().with_overrides({"claude-opus-4-1": {"bedrock_profiles": ["mars"]}})
