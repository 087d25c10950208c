"""Tasks waiting for a worker: highest priority first, and round-robin across runs.

A run that fans out 50 branches puts 50 tasks here at once; in arrival order, a small run's next
task would wait behind all of them. Instead each priority level keeps a line of tasks per run:
the next task comes from the highest level that has one, and within it from the run that was
served least recently (a run never served yet first). Two runs of one priority take turns
whatever their sizes; a `high` run's task goes before every `normal` one. Within a run, the task
with the longest remaining path after it goes first (`paths.py`), then the one ready first: when a
fan-out has more ready branches than it gets workers, its longest branch starts first.

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


class _RunLine(Generic[T]):
    """One run's waiting tasks: longest remaining path first, then in arrival order."""

    def __init__(self) -> None:
        self._by_length: dict[int, deque[Waiting[T]]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_length)

    def append(self, waiting: Waiting[T], remaining: int) -> None:
        self._by_length.setdefault(remaining, deque()).append(waiting)

    def take(self, can_run: Callable[[Waiting[T]], bool]) -> Waiting[T] | None:
        for length in sorted(self._by_length, reverse=True):
            line = self._by_length[length]
            for index, waiting in enumerate(line):
                if can_run(waiting):
                    del line[index]
                    if not line:
                        del self._by_length[length]
                    return waiting
        return None


class ReadyQueue(Generic[T]):
    """Not thread-safe: the dispatcher holds its lock around every call."""

    def __init__(self, *, fair: bool = True) -> None:
        self.fair = fair
        """False: one line in arrival order, whatever the priority or run (for comparison)."""
        self._levels: dict[int, dict[Hashable, _RunLine[T]]] = {}
        self._size = 0
        self._served: OrderedDict[Hashable, int] = OrderedDict()
        """When each run last got a task (a tick), for the runs served lately (bounded)."""
        self._tick = 0

    def __len__(self) -> int:
        return self._size

    def put(
        self, function: str, item: T, *, priority: int, run: Hashable, remaining: int = 0
    ) -> None:
        """Queue a task; `remaining`: the longest path after it in its run (`paths.py`)."""
        if not self.fair:
            priority, run, remaining = NORMAL_RANK, None, 0
        runs = self._levels.setdefault(priority, {})
        line = runs.get(run)
        if line is None:
            line = runs[run] = _RunLine()
        line.append(Waiting(function, item), remaining)
        self._size += 1

    def take(self, can_run: Callable[[Waiting[T]], bool]) -> Waiting[T] | None:
        """The next task whose function can run now, or None."""
        for priority in sorted(self._levels):
            runs = self._levels[priority]
            for run in sorted(runs, key=lambda r: self._served.get(r, -1)):
                line = runs[run]
                waiting = line.take(can_run)
                if waiting is None:
                    continue
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
