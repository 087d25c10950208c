"""The longest remaining path of a task, read from its machine: Tasks still to run in a row."""

from __future__ import annotations

from typing import Any

from switchyard.engine.asl import parse_definition
from switchyard.engine.dispatch.paths import MachinePaths, RemainingPaths


def task(following: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke"}
    if following is None:
        state["End"] = True
    else:
        state["Next"] = following
    return state


def chain(*names: str) -> dict[str, Any]:
    states = {n: task(names[i + 1] if i + 1 < len(names) else None) for i, n in enumerate(names)}
    return {"StartAt": names[0], "States": states}


MACHINE = parse_definition(
    {
        "StartAt": "Fork",
        "States": {
            "Fork": {
                "Type": "Parallel",
                "Branches": [chain("Short"), chain("Long1", "Long2", "Long3")],
                "Next": "Each",
            },
            "Each": {
                "Type": "Map",
                "ItemProcessor": chain("Item1", "Item2"),
                "Next": "Decide",
            },
            "Decide": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.again", "BooleanEquals": True, "Next": "Fork"}],
                "Default": "Last",
            },
            "Last": task(),
        },
    }
)


def test_a_branch_counts_its_own_tasks_and_what_follows_its_parallel() -> None:
    paths = MachinePaths(MACHINE)
    after_fork = 2 + 1  # a Map item's two Tasks, then Last (the loop back counts once)
    assert paths.remaining((("Fork", 0),), "Short") == 1 + after_fork
    assert paths.remaining((("Fork", 1),), "Long1") == 3 + after_fork
    assert paths.remaining((("Fork", 1),), "Long3") == 1 + after_fork


def test_a_map_item_counts_one_item_and_what_follows_the_map() -> None:
    paths = MachinePaths(MACHINE)
    assert paths.remaining((("Each", -1),), "Item1") == 2 + 1
    assert paths.remaining((), "Last") == 1


def test_a_top_level_state_counts_its_longest_branch() -> None:
    assert MachinePaths(MACHINE).remaining((), "Fork") == 3 + 2 + 1


def test_a_program_the_machine_does_not_have_gives_no_preference() -> None:
    assert MachinePaths(MACHINE).remaining((("Last", 0),), "Short") == 0
    assert MachinePaths(MACHINE).remaining((), "Missing") == 0


def test_machines_are_remembered_by_identity_and_forgotten_past_the_limit() -> None:
    paths = RemainingPaths(size=1)
    other = parse_definition(chain("A", "B"))
    assert paths.remaining(MACHINE, (("Fork", 1),), "Long1") == 6
    assert paths.remaining(other, (), "A") == 2
    assert paths.remaining(MACHINE, (("Fork", 0),), "Short") == 4


def test_a_chain_of_a_thousand_and_more_states_is_walked_without_recursion() -> None:
    names = [f"S{i}" for i in range(1500)]
    assert MachinePaths(parse_definition(chain(*names))).remaining((), "S0") == 1500
