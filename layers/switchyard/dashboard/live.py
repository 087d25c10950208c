"""Changes to run, step and gate records, pushed to open pages as they commit.

One thread LISTENs on `switchyard_dashboard` (migration 0007's triggers NOTIFY there in the
writer's transaction, so a page hears of a change the moment it commits, whoever wrote it) and
hands each event to the subscribers it concerns, on their event loop. After a reconnect every
subscriber gets a `resync` event: it may have missed some, so it reads again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

log = logging.getLogger("switchyard.dashboard")

CHANNEL = "switchyard_dashboard"
QUEUE_LIMIT = 1000
"""Events a slow page may lag behind; past that it gets one `resync` instead of the backlog."""
RESYNC: dict[str, Any] = {"t": "resync"}
RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)

Event = dict[str, Any]


@dataclass(eq=False)
class Subscription:
    wants: Callable[[Event], bool]
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Event | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_LIMIT))

    def _put(self, event: Event | None) -> None:  # on the subscriber's loop
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(RESYNC)

    def deliver(self, event: Event | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: the page is gone
            self.loop.call_soon_threadsafe(self._put, event)


class LiveFeed:
    """Started by the first subscriber; `close()` ends every open stream."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._subscribers: set[Subscription] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = threading.Event()

    def subscribe(self, wants: Callable[[Event], bool]) -> Subscription:
        subscription = Subscription(wants, asyncio.get_running_loop())
        with self._lock:
            if self._stop.is_set():
                raise RuntimeError("the live feed is closed")
            self._subscribers.add(subscription)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="switchyard-dashboard-live", daemon=True
                )
                self._thread.start()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.discard(subscription)

    def _broadcast(self, event: Event | None) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for subscription in subscribers:
            if event is None or event is RESYNC or subscription.wants(event):
                subscription.deliver(event)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    if failures:
                        self._broadcast(RESYNC)
                    failures = 0
                    while not self._stop.is_set():
                        for notify in conn.notifies(timeout=0.5):
                            self._broadcast(_event(notify.payload))
            except psycopg.Error as exc:
                self.listening.clear()
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                log.warning("live feed: %s; listening again in %.1f s", exc, delay)
                self._stop.wait(delay)

    def close(self) -> None:
        self._stop.set()
        self._broadcast(None)
        thread = self._thread
        if thread is not None:
            thread.join(timeout=5)


def _event(payload: str) -> Event:
    try:
        event = json.loads(payload)
    except ValueError:
        return RESYNC
    return event if isinstance(event, dict) else RESYNC
