"""What a run of a scenario produced, in the same shape whichever interpreter ran it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

STATUS = {
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "ABORTED": "cancelled",
    "TIMED_OUT": "timed_out",
}


@dataclass
class Outcome:
    status: str
    output: Any
    error: str | None
    cause: str | None
    steps: dict[str, dict[str, Any]]
    calls: dict[str, int]
    states_entered: list[str] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)
    """Steps whose failed input reached the dead-letter queue, in order."""
    letters: list[dict[str, Any]] = field(default_factory=list)
    """The dead-letter messages themselves, in the same order."""

    def step_statuses(self) -> dict[str, str]:
        return {step_id: str(record.get("status")) for step_id, record in self.steps.items()}


def records_from_history(
    events: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Step records as the machine carried them (last write wins), and the states entered."""
    steps: dict[str, dict[str, Any]] = {}
    entered: list[str] = []
    for event in events:
        entered_details = event.get("stateEnteredEventDetails")
        if entered_details:
            entered.append(entered_details["name"])
        for details_key, data_key in (
            ("stateEnteredEventDetails", "input"),
            ("stateExitedEventDetails", "output"),
        ):
            details = event.get(details_key) or {}
            raw = details.get(data_key)
            if not raw:
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("steps"), dict):
                for step_id, record in data["steps"].items():
                    if isinstance(record, dict) and record.get("status") not in (None, "running"):
                        steps[step_id] = record
    return steps, entered


def check(outcome: Outcome, expect: dict[str, Any]) -> None:
    """Assert that `outcome` meets a scenario's expectations (a readable diff on failure)."""
    assert outcome.status == expect["status"], (
        f"status {outcome.status} (error {outcome.error}: {outcome.cause}), "
        f"expected {expect['status']}"
    )
    if "error" in expect:
        assert outcome.error == expect["error"], f"error {outcome.error}: {outcome.cause}"
    if "cause" in expect:
        assert outcome.cause == expect["cause"], f"cause {outcome.cause!r}"
    if "steps" in expect:
        statuses = outcome.step_statuses()
        wanted = expect["steps"]
        got = {step_id: statuses.get(step_id, "not run") for step_id in wanted}
        assert got == wanted, f"step statuses {got}, expected {wanted} (all: {statuses})"
    if "output" in expect:
        assert outcome.output == expect["output"]
    if "calls" in expect:
        got_calls = {step_id: outcome.calls.get(step_id, 0) for step_id in expect["calls"]}
        assert got_calls == expect["calls"]
    if "entered" in expect:
        missing = [name for name in expect["entered"] if name not in outcome.states_entered]
        assert not missing, f"states never entered: {missing}"
    if "dead_letters" in expect:
        assert outcome.dead_letters == expect["dead_letters"]
    for step_id, wanted in (expect.get("records") or {}).items():
        _has_fields(outcome.steps.get(step_id, {}), wanted, f"steps.{step_id}")
    for step_id, wanted in (expect.get("letters") or {}).items():
        (letter,) = [m for m in outcome.letters if m.get("step_id") == step_id]
        _has_fields(letter, wanted, f"the dead letter of {step_id}")


def _has_fields(found_in: dict[str, Any], wanted: dict[str, Any], where: str) -> None:
    for key, value in wanted.items():
        found: Any = found_in
        for part in key.split("."):  # `error.type` reads a field of a field
            found = found.get(part) if isinstance(found, dict) else None
        assert found == value, f"{where}: {key} = {found!r}, expected {value!r}"
