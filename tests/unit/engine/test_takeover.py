"""What an engine does when it takes a database over: it knows its own database's owner only,
and it picks up the commands a dead engine had taken but not answered."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from switchyard.engine.commands import Command, StopExecution
from switchyard.engine.ownership import Ownership
from switchyard.engine.remote import CommandListener
from tests.pg import fresh_database


def test_the_owner_of_one_database_is_not_the_owner_of_another(pg_conninfo: str) -> None:
    with fresh_database() as other:
        owner = Ownership(other)
        assert owner.acquire(wait=False)
        try:
            assert Ownership.owner_pid(other) is not None
            assert Ownership.owner_pid(pg_conninfo) is None
        finally:
            owner.release()
        assert Ownership.owner_pid(other) is None


def test_a_command_a_dead_engine_had_taken_is_done_by_the_next(pg_conninfo: str) -> None:
    with psycopg.connect(pg_conninfo, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO engine_commands (kind, payload, status) VALUES ('stop', %s, 'taken')"
            " RETURNING id",
            (Jsonb({"arn": "arn:aws:states:us-east-1:123456789012:execution:m:gone"}),),
        ).fetchone()
        assert row is not None
    received: list[Command] = []
    done = threading.Event()

    def submit(command: Command) -> Any:
        received.append(command)
        done.set()
        return {"stopDate": "now"}

    listener = CommandListener(pg_conninfo, submit)
    listener.start()
    try:
        assert done.wait(timeout=10)
        assert isinstance(received[0], StopExecution) and received[0].arn.endswith(":gone")
        deadline = time.monotonic() + 10
        with psycopg.connect(pg_conninfo, autocommit=True) as conn:
            while True:
                status = conn.execute(
                    "SELECT status FROM engine_commands WHERE id = %s", (row[0],)
                ).fetchone()
                if status == ("done",) or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        assert status == ("done",)
    finally:
        listener.close()


def test_a_listener_closed_before_it_started_closes_quietly(pg_conninfo: str) -> None:
    """A second engine process closed while it still waits for the lock never started its
    command listener: closing it must not fail ("cannot join thread before it is started")."""
    listener = CommandListener(pg_conninfo, lambda command: None)
    listener.close()
