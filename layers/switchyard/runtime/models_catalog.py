"""The model catalog: Claude models, their prices, their Bedrock ids and inference profiles.

Every agent and router step records tokens and USD cost; the cost comes from here. Prices are USD
per million tokens, as Anthropic publishes them (cache reads cost 0.1x input, 5-minute cache
writes 1.25x input). They change: point `SWITCHYARD_MODEL_PRICES` at a JSON or YAML file to
override or add models without a release:

    claude-sonnet-4-5: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}
    my-new-model:      {input: 2, output: 8, bedrock_id: "anthropic.my-new-model-v1:0",
                        bedrock_profiles: [us, eu, global]}

Money is `Decimal` here and integer micro-dollars in budgets, never floats.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from switchyard.contract import Usage
from switchyard.contract.step_errors import PermanentError
from switchyard.runtime.settings import MODEL_PRICES_ENV

MILLION = Decimal(1_000_000)

BEDROCK_GEOGRAPHIES = ("us", "us-gov", "eu", "apac", "jp", "au", "global")
"""Prefixes of Bedrock's cross-region (system-defined) inference profiles: `us.anthropic...`."""

BEDROCK_PROFILES_DOC = (
    "https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html"
)
"""AWS's list of the cross-region profiles of each model (and each model's page under "Models at
a glance"). The `profiles=` of DEFAULT_MODELS below were checked against it and against AWS's own
catalog in github.com/aws-solutions-library-samples/guidance-for-claude-code-with-amazon-bedrock
(source/claude_code_with_bedrock/models.py), which adds the GovCloud (`us-gov.`) profiles of
Claude Sonnet 4.5 and Claude 3.7 Sonnet."""


def region_geographies(region: str) -> tuple[str, ...]:
    """The inference-profile geographies a request from `region` may use, best first (the
    narrowest that keeps the data near; `global` routes to any commercial region)."""
    if region.startswith("us-gov-"):
        return ("us-gov",)
    if region.startswith("us-"):
        return ("us", "global")
    if region.startswith("eu-"):
        return ("eu", "global")
    if region in ("ap-northeast-1", "ap-northeast-3"):
        return ("jp", "apac", "global")
    if region in ("ap-southeast-2", "ap-southeast-4"):
        return ("au", "apac", "global")
    if region.startswith("ap-"):
        return ("apac", "global")
    return ("global",)


def _profile_prefix(bedrock_id: str) -> str | None:
    prefix, dot, _ = bedrock_id.partition(".")
    return prefix if dot and prefix in BEDROCK_GEOGRAPHIES else None


class UnknownModelError(PermanentError):
    """A model id the catalog has no price for."""


@dataclass(frozen=True, slots=True)
class BedrockGrant:
    """Ids IAM must allow `bedrock:InvokeModel*` on for one model: its inference profiles (in
    the calling region) and the foundation model behind them (in every region a profile routes
    to, which for `global.` profiles is no region at all)."""

    profiles: tuple[str, ...]
    foundation_models: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model: USD per million tokens, the id Bedrock knows it by, and the geographies
    whose cross-region inference profile serves it (Claude 4.x on Bedrock is invoked only
    through one: `us.anthropic.claude-sonnet-4-5-20250929-v1:0`)."""

    id: str
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    bedrock_id: str | None = None
    aliases: tuple[str, ...] = field(default=())
    bedrock_profiles: tuple[str, ...] = field(default=())
    """Geographies with a profile for this model; empty: invoke the foundation model itself."""

    def bedrock_model_id(self, region: str) -> str:
        """What to send Bedrock from `region`: the inference profile of the first of the
        region's geographies that serves this model, else the foundation model's id (a model
        without profiles, or a `bedrock_id` that already names a profile)."""
        if not self.bedrock_id:
            raise UnknownModelError(f"model {self.id!r} has no bedrock_id in the model catalog")
        if not self.bedrock_profiles or _profile_prefix(self.bedrock_id):
            return self.bedrock_id
        for geography in region_geographies(region):
            if geography in self.bedrock_profiles:
                return f"{geography}.{self.bedrock_id}"
        raise UnknownModelError(
            f"model {self.id!r} has no Bedrock inference profile that {region} may use (it has: "
            f"{', '.join(self.bedrock_profiles)}; see {BEDROCK_PROFILES_DOC}). Deploy in a "
            f"region of one of those, or set its bedrock_id to a profile in {MODEL_PRICES_ENV}"
        )

    def bedrock_grants(self, geographies: tuple[str, ...] = BEDROCK_GEOGRAPHIES) -> BedrockGrant:
        """What a role must be allowed to invoke this model on Bedrock through a profile of one
        of `geographies` (all of them when the region is not known at synth)."""
        if not self.bedrock_id:
            return BedrockGrant((), ())
        prefix = _profile_prefix(self.bedrock_id)
        if prefix is not None:
            return BedrockGrant((self.bedrock_id,), (self.bedrock_id.split(".", 1)[1],))
        profiles = tuple(
            f"{g}.{self.bedrock_id}" for g in self.bedrock_profiles if g in geographies
        )
        return BedrockGrant(profiles, (self.bedrock_id,))

    def cost(
        self,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> Decimal:
        """Exact USD cost of the tokens."""
        return (
            self.input * input_tokens
            + self.output * output_tokens
            + self.cache_read * cache_read_tokens
            + self.cache_write * cache_write_tokens
        ) / MILLION


def _model(
    model_id: str,
    input_price: str,
    output_price: str,
    bedrock_id: str,
    *aliases: str,
    profiles: tuple[str, ...],
) -> ModelInfo:
    base = Decimal(input_price)
    return ModelInfo(
        id=model_id,
        input=base,
        output=Decimal(output_price),
        cache_read=base * Decimal("0.1"),
        cache_write=base * Decimal("1.25"),
        bedrock_id=bedrock_id,
        aliases=aliases,
        bedrock_profiles=profiles,
    )


DEFAULT_MODELS: tuple[ModelInfo, ...] = (
    _model(
        "claude-haiku-4-5",
        "1",
        "5",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "claude-haiku-4-5-20251001",
        profiles=("us", "eu", "jp", "au", "global"),
    ),
    _model(
        "claude-sonnet-4-5",
        "3",
        "15",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-sonnet-4-5-20250929",
        profiles=("us", "us-gov", "eu", "jp", "au", "global"),
    ),
    _model(
        "claude-opus-4-5",
        "5",
        "25",
        "anthropic.claude-opus-4-5-20251101-v1:0",
        "claude-opus-4-5-20251101",
        profiles=("us", "eu", "global"),
    ),
    _model(
        "claude-opus-4-1",
        "15",
        "75",
        "anthropic.claude-opus-4-1-20250805-v1:0",
        "claude-opus-4-1-20250805",
        profiles=("us",),
    ),
    _model(
        "claude-opus-4-20250514",
        "15",
        "75",
        "anthropic.claude-opus-4-20250514-v1:0",
        "claude-opus-4-0",
        profiles=("us",),
    ),
    _model(
        "claude-sonnet-4-20250514",
        "3",
        "15",
        "anthropic.claude-sonnet-4-20250514-v1:0",
        "claude-sonnet-4-0",
        profiles=("us", "eu", "apac", "global"),
    ),
    _model(
        "claude-3-7-sonnet-20250219",
        "3",
        "15",
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "claude-3-7-sonnet-latest",
        profiles=("us", "us-gov", "eu", "apac"),
    ),
    _model(
        "claude-3-5-haiku-20241022",
        "0.80",
        "4",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "claude-3-5-haiku-latest",
        profiles=("us",),
    ),
)


class ModelCatalog:
    """Models by id or alias."""

    def __init__(self, models: tuple[ModelInfo, ...] | list[ModelInfo] = DEFAULT_MODELS) -> None:
        self._models: dict[str, ModelInfo] = {}
        for model in models:
            self._add(model)

    def _add(self, model: ModelInfo) -> None:
        self._models[model.id] = model
        for alias in model.aliases:
            self._models[alias] = model

    def get(self, model_id: str) -> ModelInfo:
        try:
            return self._models[model_id]
        except KeyError:
            raise UnknownModelError(
                f"no price for model {model_id!r}; known: {', '.join(self.ids())}. "
                f"Add it in a prices file named by {MODEL_PRICES_ENV}."
            ) from None

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._models

    def ids(self) -> list[str]:
        return sorted({m.id for m in self._models.values()})

    def models(self) -> list[ModelInfo]:
        """Every model once (aliases not repeated), by id."""
        return sorted({m.id: m for m in self._models.values()}.values(), key=lambda m: m.id)

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> ModelCatalog:
        """A catalog with prices changed or models added from `{id: {input, output, ...}}`."""
        models = {m.id: m for m in self._models.values()}
        for model_id, entry in overrides.items():
            base = models.get(model_id) or (self._models.get(model_id))
            models[model_id] = _entry_to_model(model_id, entry, base)
        return ModelCatalog(list(models.values()))

    def cost_usd(self, usage: Usage) -> Decimal:
        """USD cost of a `Usage` (its `model` must be set)."""
        if usage.model is None:
            raise UnknownModelError("usage without a model has no price")
        extra = usage.model_extra or {}
        return self.get(usage.model).cost(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=int(extra.get("cache_write_tokens", 0) or 0),
        )


def _price(value: Any, name: str, model_id: str) -> Decimal:
    try:
        price = Decimal(str(value))
    except ArithmeticError:
        raise ValueError(f"{name} price of {model_id!r} is not a number: {value!r}") from None
    if price < 0:
        raise ValueError(f"{name} price of {model_id!r} is negative")
    return price


def _entry_to_model(model_id: str, entry: Mapping[str, Any], base: ModelInfo | None) -> ModelInfo:
    if base is None:
        if "input" not in entry or "output" not in entry:
            raise ValueError(f"new model {model_id!r} needs input and output prices")
        input_price = _price(entry["input"], "input", model_id)
        base = ModelInfo(
            id=model_id,
            input=input_price,
            output=_price(entry["output"], "output", model_id),
            cache_read=input_price * Decimal("0.1"),
            cache_write=input_price * Decimal("1.25"),
        )
    changes: dict[str, Any] = {"id": model_id}
    for name in ("input", "output", "cache_read", "cache_write"):
        if name in entry:
            changes[name] = _price(entry[name], name, model_id)
    if "input" in entry and "cache_read" not in entry:
        changes["cache_read"] = changes["input"] * Decimal("0.1")
    if "input" in entry and "cache_write" not in entry:
        changes["cache_write"] = changes["input"] * Decimal("1.25")
    if "bedrock_id" in entry:
        changes["bedrock_id"] = entry["bedrock_id"]
    if "bedrock_profiles" in entry:
        changes["bedrock_profiles"] = _profiles(entry["bedrock_profiles"], model_id)
    if "aliases" in entry:
        changes["aliases"] = tuple(entry["aliases"])
    return replace(base, **changes)


def _profiles(value: Any, model_id: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(v in BEDROCK_GEOGRAPHIES for v in value):
        raise ValueError(
            f"bedrock_profiles of {model_id!r} must list some of {', '.join(BEDROCK_GEOGRAPHIES)}"
        )
    return tuple(value)


def load_catalog(path: str | os.PathLike[str] | None = None) -> ModelCatalog:
    """The default catalog with the overrides of `path` (or of `$SWITCHYARD_MODEL_PRICES`)."""
    source = path if path is not None else os.environ.get(MODEL_PRICES_ENV)
    catalog = ModelCatalog()
    if not source:
        return catalog
    text = Path(source).read_text("utf-8")
    data = json.loads(text) if str(source).endswith(".json") else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a model prices file maps model ids to prices")
    return catalog.with_overrides(data)


@lru_cache(maxsize=4)
def _cached_catalog(source: str | None) -> ModelCatalog:
    return load_catalog(source) if source else ModelCatalog()


def default_catalog() -> ModelCatalog:
    """The catalog for this process (cached per value of `$SWITCHYARD_MODEL_PRICES`)."""
    return _cached_catalog(os.environ.get(MODEL_PRICES_ENV))


def cost_usd(usage: Usage, catalog: ModelCatalog | None = None) -> Decimal:
    """USD cost of `usage`, from the default catalog unless one is given."""
    return (catalog or default_catalog()).cost_usd(usage)


def to_micros(usd: Decimal | int | str | float) -> int:
    """Integer micro-dollars, rounded up: a budget never under-counts a fraction of a micro."""
    amount = Decimal(str(usd)) if not isinstance(usd, Decimal) else usd
    return int((amount * MILLION).to_integral_value(rounding=ROUND_CEILING))


def from_micros(micros: int) -> Decimal:
    return Decimal(micros) / MILLION
