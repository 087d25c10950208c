"""Tasks waiting for a worker: highest priority first, and round-robin across runs.

A run that fans out 50 branches puts 50 tasks here at once; in arrival order, a small run's next
task would wait behind all of them. Instead each priority level keeps a line of tasks per run:
the next task comes from the highest level that has one, and within it from the run that was
served least recently (a run never served yet first). Two runs of one priority take turns
whatever their sizes; a `high` run's task goes before every `normal` one.

Each function also has a cap (Lambda's reserved concurrency): a task whose function is at its
cap is passed over for the next one that can run, and keeps its place.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from switchyard.model import PRIORITIES

T = TypeVar("T")

PRIORITY_RANK: dict[str, int] = {name: rank for rank, name in enumerate(PRIORITIES)}
"""`high` 0, `normal` 1, `low` 2: a lower rank goes first."""
NORMAL_RANK = PRIORITY_RANK["normal"]
SERVED_MEMORY = 4096
"""Runs whose last turn is remembered; one forgotten counts as never served."""


def task_priority(payload: Any) -> int:
    """The rank of a task from its payload: the run's `priority` (`context.run.priority`, which
    run_start set from the run's start or its workflow), `normal` when it has none."""
    if isinstance(payload, Mapping):
        context = payload.get("context")
        run = context.get("run") if isinstance(context, Mapping) else None
        if isinstance(run, Mapping):
            return PRIORITY_RANK.get(str(run.get("priority")), NORMAL_RANK)
    return NORMAL_RANK


@dataclass(frozen=True, slots=True)
class Waiting(Generic[T]):
    function: str
    item: T


class ReadyQueue(Generic[T]):
    """Not thread-safe: the dispatcher holds its lock around every call."""

    def __init__(self, *, fair: bool = True) -> None:
        self.fair = fair
        """False: one line in arrival order, whatever the priority or run (for comparison)."""
        self._levels: dict[int, dict[Hashable, deque[Waiting[T]]]] = {}
        self._size = 0
        self._served: OrderedDict[Hashable, int] = OrderedDict()
        """When each run last got a task (a tick), for the runs served lately (bounded)."""
        self._tick = 0

    def __len__(self) -> int:
        return self._size

    def put(self, function: str, item: T, *, priority: int, run: Hashable) -> None:
        if not self.fair:
            priority, run = NORMAL_RANK, None
        runs = self._levels.setdefault(priority, {})
        runs.setdefault(run, deque()).append(Waiting(function, item))
        self._size += 1

    def take(self, can_run: Callable[[Waiting[T]], bool]) -> Waiting[T] | None:
        """The next task whose function can run now, or None."""
        for priority in sorted(self._levels):
            runs = self._levels[priority]
            for run in sorted(runs, key=lambda r: self._served.get(r, -1)):
                line = runs[run]
                for index, waiting in enumerate(line):
                    if can_run(waiting):
                        del line[index]
                        self._size -= 1
                        if not line:
                            del runs[run]
                        if not runs:
                            del self._levels[priority]
                        self._serve(run)
                        return waiting
        return None

    def _serve(self, run: Hashable) -> None:
        self._tick += 1
        self._served[run] = self._tick
        self._served.move_to_end(run)
        while len(self._served) > SERVED_MEMORY:
            self._served.popitem(last=False)

    def clear(self) -> None:
        self._levels.clear()
        self._size = 0
        self._served.clear()
