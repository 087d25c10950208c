"""How large a compiled machine is and what its happy path costs on a Standard workflow.

`switchyard compile --stats` prints these per workflow; docs/compiler.md keeps each example's
numbers. The happy path is the run in which every step runs and succeeds at its first attempt:
every check lets its step run, a router takes its first route, a human gate is approved at its
first tier, a loop ends after one iteration and a map has one item. Counted on the definition
itself, so any compiled machine (an older one too) can be measured the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

PRICE_PER_TRANSITION_USD = Decimal("0.025") / 1000
"""AWS Step Functions Standard workflows: $0.025 per 1,000 state transitions (US East,
https://aws.amazon.com/step-functions/pricing/). Every state entered is one transition."""

MAX_WALK = 10_000
"""A walk longer than this is a loop the walk could not leave (never in a compiled machine)."""


@dataclass(frozen=True)
class MachineStats:
    workflow: str
    steps: int
    states: int
    happy_transitions: int

    @property
    def states_per_step(self) -> float:
        return self.states / self.steps if self.steps else float(self.states)

    @property
    def happy_price_usd(self) -> Decimal:
        return self.happy_transitions * PRICE_PER_TRANSITION_USD

    def line(self) -> str:
        return (
            f"{self.workflow}: {self.states} states for {self.steps} steps "
            f"({self.states_per_step:.2f} per step); happy path {self.happy_transitions} "
            f"transitions, ${self.happy_price_usd:.6f} per run on a Standard workflow "
            f"(${PRICE_PER_TRANSITION_USD * 1000:.3f} per 1,000 transitions)"
        )


def count_states(states: dict[str, Any]) -> int:
    """Every state, nested ones (Parallel branches, Map item processors) included."""
    total = 0
    for state in states.values():
        total += 1
        for branch in state.get("Branches", []):
            total += count_states(branch["States"])
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            total += count_states(processor["States"])
    return total


def happy_transitions(definition: dict[str, Any]) -> int:
    """States entered on the happy path (see the module's docstring)."""
    return _walk(definition["StartAt"], definition["States"])


def _walk(start: str, states: dict[str, Any]) -> int:
    entered = 0
    name: str | None = start
    while name is not None:
        if entered > MAX_WALK:
            raise ValueError(f"the happy path does not end (at {name})")
        state = states[name]
        entered += 1
        kind = state["Type"]
        if kind == "Parallel":
            entered += sum(_walk(b["StartAt"], b["States"]) for b in state["Branches"])
        elif kind == "Map":
            processor = state.get("ItemProcessor") or state["Iterator"]
            entered += _walk(processor["StartAt"], processor["States"])
        if kind == "Choice":
            name = _happy_choice(state, states)
        elif state.get("End") or kind in ("Succeed", "Fail"):
            name = None
        else:
            name = state["Next"]
    return entered


def _happy_choice(state: dict[str, Any], states: dict[str, Any]) -> str:
    """The branch a happy run takes: the `Default` when any rule leads away from the work (a
    skip, a timeout, a failure); otherwise the first rule (a router's first route, a loop's
    `until` holding)."""
    targets = [str(rule["Next"]) for rule in state.get("Choices", [])]
    if any(_away(states[target]) for target in targets) and "Default" in state:
        return str(state["Default"])
    return targets[0] if targets else str(state["Default"])


def _away(state: dict[str, Any]) -> bool:
    """A state a happy run never enters: a Fail, one that sets the error, or a skip."""
    if state["Type"] == "Fail" or state.get("ResultPath") == "$.error":
        return True
    written = state.get("Result") if "Result" in state else state.get("Parameters")
    return isinstance(written, dict) and written.get("status") == "skipped"


def machine_stats(workflow: str, steps: int, definition: dict[str, Any]) -> MachineStats:
    return MachineStats(
        workflow=workflow,
        steps=steps,
        states=count_states(definition["States"]),
        happy_transitions=happy_transitions(definition),
    )
