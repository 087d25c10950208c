"""Answers from a script file instead of a model (offline runs and tests), per spec/cli.md.

    classify:                     # step id
      - {output: {label: billing, confidence: 0.93}, input_tokens: 412, output_tokens: 18}
    research:
      - {text: "The customer was double charged on 3 May."}
      - {error: rate_limit, retry_after: 1}
    route:
      - {route: billing, reason: "mentions an invoice"}

Which entry answers is a pure function of the call's key, never of a counter in memory, so a run
continued after a crash or by another process gets the same answers:

    position = attempt - 1  +  map index  +  (loop iteration - 1)  +  turn

For a step outside maps and loops with no tools that is "one entry per attempt"; inside a map it
is one per item, inside a loop one per iteration (each moved on by retries). The last entry
repeats. An extension for agents with tools: an entry `{tool_use: [{name, input}], text}` is a
turn that calls tools; the agent's next turn takes the next entry. An agent with
`continue_as_new` numbers its turns across its segments (its calls are no loop iterations), so
its entries are its model calls in order, each segment's summary one of them.

`max_tokens` is honoured as a model honours it: an answer longer than the request's `max_tokens`
(its `output_tokens`, else its estimate) stops there with `stop_reason: max_tokens`, its text cut
to what that many tokens hold, and a structured answer or tool call that was cut is dropped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from switchyard.contract import Usage
from switchyard.contract.step_errors import (
    BudgetExceededError,
    InvalidOutputError,
    PermanentError,
    PolicyViolationError,
    RateLimitedError,
    StepError,
    StepTimeoutError,
    TransientError,
)
from switchyard.runtime.providers.base import (
    CallKey,
    ContentBlock,
    ModelOverloadedError,
    ModelRequest,
    ModelResponse,
    estimate_tokens,
    request_text,
)
from switchyard.runtime.settings import LLM_SCRIPT_ENV

_ENTRY_KEYS = {
    "output",
    "text",
    "route",
    "reason",
    "error",
    "message",
    "retry_after",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "tool_use",
}
_ERRORS: dict[str, type[StepError]] = {
    "rate_limit": RateLimitedError,
    "transient": TransientError,
    "overloaded": ModelOverloadedError,
    "timeout": StepTimeoutError,
    "invalid_output": InvalidOutputError,
    "budget": BudgetExceededError,
    "policy": PolicyViolationError,
    "permanent": PermanentError,
}


class ScriptError(ValueError):
    """A script file that does not follow the format."""


def load_script(
    source: str | os.PathLike[str] | Mapping[str, Any],
) -> dict[str, list[dict[str, Any]]]:
    """Read and check a script (a path to YAML/JSON, or the already-parsed mapping)."""
    if isinstance(source, Mapping):
        data: Any = dict(source)
        where = "script"
    else:
        where = str(source)
        text = Path(source).read_text("utf-8")
        data = json.loads(text) if where.endswith(".json") else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ScriptError(f"{where}: a script maps step ids to lists of entries")
    script: dict[str, list[dict[str, Any]]] = {}
    for step_id, entries in data.items():
        if isinstance(entries, dict):
            entries = [entries]
        if not isinstance(entries, list) or not entries:
            raise ScriptError(f"{where}: {step_id}: give a non-empty list of entries")
        for n, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise ScriptError(f"{where}: {step_id}[{n}]: an entry is a mapping")
            unknown = set(entry) - _ENTRY_KEYS
            if unknown:
                raise ScriptError(f"{where}: {step_id}[{n}]: unknown keys {sorted(unknown)}")
            if "error" in entry and str(entry["error"]) not in _ERRORS:
                raise ScriptError(
                    f"{where}: {step_id}[{n}]: error must be one of {sorted(_ERRORS)}"
                )
        script[str(step_id)] = entries
    return script


def position(key: CallKey) -> int:
    """Index into a step's entries for this call (before the last entry repeats)."""
    return (
        (key.attempt - 1)
        + (key.index or 0)
        + ((key.iteration - 1) if key.iteration else 0)
        + key.turn
    )


class ScriptedProvider:
    """A `ModelProvider` that plays a script; usage records the provider as `scripted`."""

    name = "scripted"

    def __init__(self, script: str | os.PathLike[str] | Mapping[str, Any]) -> None:
        self.script = load_script(script)

    @classmethod
    def from_env(cls) -> ScriptedProvider | None:
        path = os.environ.get(LLM_SCRIPT_ENV)
        return cls(path) if path else None

    def entry_for(self, key: CallKey) -> dict[str, Any]:
        entries = self.script.get(key.step_id)
        if entries is None:
            raise PermanentError(
                f"the model script has no entries for step {key.step_id!r} "
                f"(it has: {', '.join(sorted(self.script)) or 'none'})"
            )
        return entries[min(position(key), len(entries) - 1)]

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.key is None:
            raise PermanentError("a scripted model needs the call's key (run, step, attempt)")
        entry = self.entry_for(request.key)
        if "error" in entry:
            raise _scripted_error(entry, request)
        blocks: list[ContentBlock] = []
        structured: Any = None
        if "route" in entry:
            structured = {"route": entry["route"], "reason": entry.get("reason", "")}
            text = json.dumps(structured)
        elif "output" in entry:
            structured = entry["output"]
            text = json.dumps(structured)
        else:
            text = str(entry.get("text", ""))
        if text:
            blocks.append(ContentBlock("text", text=text))
        for n, call in enumerate(entry.get("tool_use") or []):
            blocks.append(
                ContentBlock(
                    "tool_use",
                    id=f"toolu_scripted_{request.key.turn}_{n}",
                    name=str(call["name"]),
                    input=dict(call.get("input") or {}),
                )
            )
        output_tokens = int(entry.get("output_tokens", estimate_tokens(text or "{}")))
        truncated = output_tokens > request.max_tokens
        if truncated:
            # As a real model: it stops at max_tokens, mid-answer. The text keeps what that many
            # tokens hold (four characters a token); a cut JSON answer or tool call is no answer.
            output_tokens = request.max_tokens
            kept = text[: request.max_tokens * 4]
            blocks = [ContentBlock("text", text=kept)] if kept else []
            if kept != text:
                structured = None
        tool_turn = any(block.type == "tool_use" for block in blocks)
        usage = Usage(
            input_tokens=int(entry.get("input_tokens", estimate_tokens(request_text(request)))),
            output_tokens=output_tokens,
            cache_read_tokens=int(entry.get("cache_read_tokens", 0)),
            model=request.model,
            provider=self.name,
        )
        stop_reason = "max_tokens" if truncated else "tool_use" if tool_turn else "end_turn"
        return ModelResponse(
            content=tuple(blocks),
            stop_reason=stop_reason,
            usage=usage,
            structured=None if tool_turn else structured,
        )


def _scripted_error(entry: Mapping[str, Any], request: ModelRequest) -> StepError:
    return scripted_error(entry, request.key.step_id if request.key else "?")


def scripted_error(entry: Mapping[str, Any], step_id: str) -> StepError:
    """The error a script entry `{error: kind, message?, retry_after?}` stands for."""
    kind = str(entry["error"])
    message = str(entry.get("message") or f"scripted {kind} for step {step_id}")
    if kind == "rate_limit":
        retry_after = entry.get("retry_after")
        return RateLimitedError(
            message, retry_after=float(retry_after) if retry_after is not None else None
        )
    return _ERRORS[kind](message)
