"""What switchyard adds to the local engine besides its run records
(`switchyard.records.engine_hooks`): a run's model script handed to its agent steps, and the
idempotent calls an engine that died left in progress let go on recovery."""

from __future__ import annotations

from typing import Any

from switchyard.engine.hooks import NoHooks, PayloadInput, RecoverInput
from switchyard.stores.idempotency.postgres import expire_calls_in_progress

SCRIPTED_FUNCTIONS = frozenset({"agent_step", "router_step", "tool_step"})
"""The step functions that answer from a model script (`llm_script` in their payload)."""


class ScriptedAnswers(NoHooks):
    """A run started with a model script (`switchyard run --llm-script`, the API's header) keeps
    it in its options; each of its agent, router and tool steps is sent it with its payload."""

    def task_payload(self, input: PayloadInput) -> Any:
        script = input.execution.options.get("llm_script")
        if script and isinstance(input.payload, dict) and input.function in SCRIPTED_FUNCTIONS:
            return {**input.payload, "llm_script": script}
        return input.payload


class CallsInProgress(NoHooks):
    """When an engine takes a database over, the step calls in progress ran inside the engine
    that died: they are let go, so that their re-dispatched steps may call again instead of
    waiting out the Lambda deadline (`idempotency_records`)."""

    def on_recover(self, input: RecoverInput) -> None:
        expire_calls_in_progress(input.conn)
