"""What a state does when entered: explicit outcomes instead of control flow by exceptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Next:
    """The state is done: go to `state` with `output` as its input."""

    state: str
    output: Any


@dataclass(frozen=True, slots=True)
class Ended:
    """The state is done and ends its (sub-)machine with `output`."""

    output: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """The state failed; its Retry and Catch rules decide what comes next."""

    error: str
    cause: str


@dataclass(frozen=True, slots=True)
class Suspended:
    """The state waits: a task, a timer, or its branches and items."""


SUSPENDED = Suspended()
Outcome = Next | Ended | Failed | Suspended
