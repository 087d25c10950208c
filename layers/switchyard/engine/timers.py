"""Timers in memory, mirroring the `sfn_timers` rows: the next one to fire is a heap pop away.

Setting a timer again replaces it and cancelling removes it; the heap keeps stale entries and
skips them when they come up (lazy deletion), so both are O(log n)."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from datetime import datetime

TimerKey = tuple[int, int, str]
"""(execution id, frame id, kind)."""


@dataclass(frozen=True)
class DueTimer:
    execution_id: int
    frame: int
    kind: str
    attempt: int


class TimerHeap:
    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, TimerKey]] = []
        self._live: dict[TimerKey, tuple[datetime, int, int]] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def set(self, key: TimerKey, fire_at: datetime, attempt: int) -> None:
        sequence = next(self._sequence)
        self._live[key] = (fire_at, attempt, sequence)
        heapq.heappush(self._heap, (fire_at, sequence, key))

    def cancel(self, key: TimerKey) -> None:
        self._live.pop(key, None)

    def cancel_execution(self, execution_id: int) -> None:
        for key in [k for k in self._live if k[0] == execution_id]:
            del self._live[key]

    def next_at(self) -> datetime | None:
        while self._heap:
            fire_at, sequence, key = self._heap[0]
            live = self._live.get(key)
            if live is not None and live[2] == sequence:
                return fire_at
            heapq.heappop(self._heap)
        return None

    def pop_due(self, now: datetime) -> list[DueTimer]:
        due: list[DueTimer] = []
        while self._heap and self._heap[0][0] <= now:
            _, sequence, key = heapq.heappop(self._heap)
            live = self._live.get(key)
            if live is None or live[2] != sequence:
                continue
            del self._live[key]
            due.append(DueTimer(key[0], key[1], key[2], live[1]))
        return due
