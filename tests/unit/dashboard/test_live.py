"""The live feed on its own: NOTIFYs from committed run, step and gate records reach the
subscribers they concern; nothing before COMMIT; a lost connection is listened again, with a
`resync` so that pages read what they may have missed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from switchyard.dashboard.live import CHANNEL, RESYNC, LiveFeed


@pytest.fixture
def feed(pg_conninfo: str) -> Iterator[LiveFeed]:
    running = LiveFeed(pg_conninfo)
    yield running
    running.close()


async def _next(queue: asyncio.Queue[Any], timeout: float = 5.0) -> Any:
    return await asyncio.wait_for(queue.get(), timeout)


def _notify(conninfo: str, event: dict[str, Any]) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(event)))


def test_a_subscriber_gets_only_the_events_it_wants(feed: LiveFeed, pg_conninfo: str) -> None:
    async def scenario() -> list[Any]:
        mine = feed.subscribe(lambda e: e.get("e") == 1)
        other = feed.subscribe(lambda e: e.get("e") == 2)
        await asyncio.to_thread(feed.listening.wait, 10)
        await asyncio.to_thread(_notify, pg_conninfo, {"t": "step", "e": 2, "k": "b"})
        await asyncio.to_thread(_notify, pg_conninfo, {"t": "step", "e": 1, "k": "a"})
        got = [await _next(mine.queue), await _next(other.queue)]
        assert mine.queue.empty()
        return got

    assert asyncio.run(scenario()) == [
        {"t": "step", "e": 1, "k": "a"},
        {"t": "step", "e": 2, "k": "b"},
    ]


def test_a_change_is_announced_when_its_transaction_commits(
    feed: LiveFeed, pg_conninfo: str
) -> None:
    async def scenario() -> None:
        sub = feed.subscribe(lambda e: e.get("t") == "gate")
        await asyncio.to_thread(feed.listening.wait, 10)
        with psycopg.connect(pg_conninfo) as conn:  # one transaction, committed on exit
            conn.execute(
                "INSERT INTO gates (id, run_id, execution_arn, workflow, step_id, kind, token,"
                " status) VALUES ('g-live', 'run-live', 'arn:x', 'w', 'approve', 'approval',"
                " 'tok', 'open')"
            )
            await asyncio.sleep(0.3)
            assert sub.queue.empty()  # not before COMMIT
        event = await _next(sub.queue)
        assert event == {"t": "gate", "r": "run-live", "k": "approve", "s": "open"}
        assert "tok" not in json.dumps(event)  # the task token stays in the table

    asyncio.run(scenario())


def test_a_lost_connection_is_listened_again_with_a_resync(
    feed: LiveFeed, pg_conninfo: str
) -> None:
    async def scenario() -> None:
        sub = feed.subscribe(lambda e: True)
        await asyncio.to_thread(feed.listening.wait, 10)
        with psycopg.connect(pg_conninfo, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query LIKE %s",
                (f"LISTEN {CHANNEL}%",),
            )
        assert await _next(sub.queue) == RESYNC
        await asyncio.to_thread(_notify, pg_conninfo, {"t": "run", "e": 7})
        assert await _next(sub.queue) == {"t": "run", "e": 7}

    asyncio.run(scenario())


def test_closing_the_feed_ends_every_stream(feed: LiveFeed) -> None:
    async def scenario() -> None:
        sub = feed.subscribe(lambda e: True)
        await asyncio.to_thread(feed.close)
        assert await _next(sub.queue) is None
        with pytest.raises(RuntimeError, match="closed"):
            feed.subscribe(lambda e: True)

    asyncio.run(scenario())
