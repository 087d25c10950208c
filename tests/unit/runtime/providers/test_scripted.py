"""The scripted provider: deterministic answers by (run, step, index, iteration, attempt, turn)."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import PermanentError, RateLimitedError, TransientError
from switchyard.runtime.providers import CallKey, ModelRequest, ScriptedProvider
from switchyard.runtime.providers.scripted import ScriptError, load_script, position

SCRIPT = """
classify:
  - {output: {label: billing, confidence: 0.93}, input_tokens: 412, output_tokens: 18}
research:
  - {text: "The customer was double charged on 3 May."}
  - {error: rate_limit, retry_after: 1}
  - {text: "second answer"}
route:
  - {route: billing, reason: "mentions an invoice"}
items:
  - {text: item0}
  - {text: item1}
  - {text: item2}
"""


@pytest.fixture
def provider(tmp_path: Path) -> ScriptedProvider:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return ScriptedProvider(path)


def ask(provider: ScriptedProvider, step: str, **key: int) -> object:
    request = ModelRequest(
        model="claude-haiku-4-5",
        messages=[{"role": "user", "content": "x" * 40}],
        max_tokens=100,
        key=CallKey("run-1", step, **key),  # type: ignore[arg-type]
    )
    return provider.complete(request)


def test_structured_output_with_given_token_counts(provider: ScriptedProvider) -> None:
    response = ask(provider, "classify")
    assert response.structured == {"label": "billing", "confidence": 0.93}  # type: ignore[attr-defined]
    usage = response.usage  # type: ignore[attr-defined]
    assert (usage.input_tokens, usage.output_tokens, usage.provider) == (412, 18, "scripted")


def test_entries_are_used_one_per_attempt_and_the_last_repeats(provider: ScriptedProvider) -> None:
    assert ask(provider, "research", attempt=1).text.startswith("The customer")  # type: ignore[attr-defined]
    with pytest.raises(RateLimitedError) as info:
        ask(provider, "research", attempt=2)
    assert info.value.retry_after == 1.0 and info.value.name is StepErrorName.RATE_LIMIT
    assert ask(provider, "research", attempt=3).text == "second answer"  # type: ignore[attr-defined]
    assert ask(provider, "research", attempt=9).text == "second answer"  # type: ignore[attr-defined]


def test_the_same_key_always_gets_the_same_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCRIPT)
    # Two providers, as after a crash and a restart: no hidden counters.
    first, second = ScriptedProvider(path), ScriptedProvider(path)
    for attempt in (1, 2, 3):
        key = {"attempt": attempt}
        try:
            a = ask(first, "research", **key).text  # type: ignore[attr-defined]
        except RateLimitedError:
            a = "rate_limit"
        try:
            b = ask(second, "research", **key).text  # type: ignore[attr-defined]
        except RateLimitedError:
            b = "rate_limit"
        assert a == b


def test_map_items_and_loop_iterations_take_their_own_entries(provider: ScriptedProvider) -> None:
    assert [ask(provider, "items", index=i).text for i in range(3)] == ["item0", "item1", "item2"]  # type: ignore[attr-defined]
    assert ask(provider, "items", iteration=2).text == "item1"  # type: ignore[attr-defined]
    assert position(CallKey("r", "s", index=1, attempt=2)) == 2


def test_token_counts_default_to_an_estimate(provider: ScriptedProvider) -> None:
    usage = ask(provider, "research").usage  # type: ignore[attr-defined]
    assert usage.input_tokens == 11 and usage.output_tokens == 11  # about 4 characters a token


def test_router_entries_and_unknown_steps(provider: ScriptedProvider) -> None:
    assert ask(provider, "route").structured == {
        "route": "billing",
        "reason": "mentions an invoice",
    }  # type: ignore[attr-defined]
    with pytest.raises(PermanentError, match="no entries for step 'nope'"):
        ask(provider, "nope")


def test_scripted_transient_errors_and_bad_scripts() -> None:
    provider = ScriptedProvider({"a": [{"error": "transient"}]})
    with pytest.raises(TransientError):
        ask(provider, "a")
    with pytest.raises(ScriptError, match="unknown keys"):
        load_script({"a": [{"txt": "typo"}]})
    with pytest.raises(ScriptError, match="error must be"):
        load_script({"a": [{"error": "boom"}]})
