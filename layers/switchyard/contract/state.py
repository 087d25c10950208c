"""The JSON a compiled state machine carries from state to state (docs/contract.md).

    {
      "inputs": {...},                      the run's input, validated, defaults filled
      "run":    {"id", "workflow", "version", "started_at", "tenant"},
      "steps":  {"<id>": {record}, ...},    one record per finished step
      "scope":  {...}                       only inside a map item or a loop
    }

A step record is `{"status": "completed", "output", "attempts", "cost_usd", "usage"}`,
`{"status": "skipped", "output": null}`, or `{"status": "failed", "error": {"type", "message"}}`
(plus `"output"` and `"fallback": "<id>"` when a fallback stood in). Inside a map item `scope` is
`{"item", "index"}`; inside a loop it is `{"iteration", "previous", "result", "meta"}`.
"""

from __future__ import annotations

from enum import StrEnum

STATE_KEYS = ("inputs", "run", "steps")
"""Keys every state has; Parallel branches are merged back into exactly these."""

LARGE_OUTPUT_BYTES = 32 * 1024
"""Outputs larger than this (as JSON) travel as references to the output store."""

OUTPUT_REF_KEY = "$switchyard_ref"
"""A large value replaced by `{"$switchyard_ref": {"store", "key", "bytes"}}`."""


class StepStatus(StrEnum):
    COMPLETED = "completed"
    SKIPPED = "skipped"
    FAILED = "failed"
    RUNNING = "running"
    WAITING = "waiting"
