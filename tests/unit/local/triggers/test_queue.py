"""`queue` triggers: a durable queue in PostgreSQL, consumed at least once, a run per message,
failed starts to the trigger's dead letters."""

from __future__ import annotations

import json
from dataclasses import replace

import psycopg

from switchyard.local.triggers.queue import MAX_RECEIVES
from switchyard.local.triggers.store import trigger_dead_letters
from tests.unit.local.triggers.conftest import Stack


def visible_now(stack: Stack) -> None:
    """What waiting out the visibility timeout does: the message is ready again."""
    with psycopg.connect(stack.conninfo) as conn:
        conn.execute("UPDATE queue_messages SET visible_at = now() WHERE done_at IS NULL")


def test_each_message_starts_one_run_named_after_it(stack: Stack) -> None:
    service = stack.service()
    first = service.send("tickets", json.dumps({"text": "my order is late"}))
    second = service.send("tickets", json.dumps({"text": "refund please"}))
    delivered = service.consumer.poll(service.specs)
    assert [d.status for d in delivered] == ["started", "started"]
    spec = next(s for s in service.specs if s.kind == "queue")
    assert stack.runs() == {
        spec.run_id(first): {"body": "my order is late"},
        spec.run_id(second): {"body": "refund please"},
    }
    visible_now(stack)
    assert service.consumer.poll(service.specs) == []  # done messages are not delivered again


def test_a_message_redelivered_after_a_crash_starts_no_second_run(stack: Stack) -> None:
    service = stack.service()
    message = service.send("tickets", json.dumps({"text": "again"}))
    spec = next(s for s in service.specs if s.kind == "queue")
    # an engine started the run and died before recording the delivery or marking it done
    service.engine.start_execution(spec.machine_arn, spec.run_id(message), {"body": "again"}, {})
    [again] = service.consumer.poll(service.specs)
    assert again.status == "duplicate" and len(stack.runs()) == 1


def test_a_message_the_input_cannot_be_made_from_is_a_dead_letter_at_once(stack: Stack) -> None:
    service = stack.service()
    service.send("tickets", "plain text has no .text")
    [dead] = service.consumer.poll(service.specs)
    assert dead.status == "dead_letter" and dead.error is not None
    assert dead.error["type"] == "invalid_input"
    assert stack.runs() == {}
    with psycopg.connect(stack.conninfo) as conn:
        letters = trigger_dead_letters(conn)
    assert letters[0]["delivery_id"] == dead.delivery_id  # what `switchyard runs list` shows
    listed = service.store.dead_letters()
    assert listed[0]["payload"]["body"] == "plain text has no .text"  # kept, not lost


def test_a_start_the_engine_fails_is_retried_then_dead_lettered(stack: Stack) -> None:
    service = stack.service()
    spec = next(s for s in service.specs if s.kind == "queue")
    gone = replace(spec, machine_arn=spec.machine_arn + "-deleted")
    message = service.send("tickets", json.dumps({"text": "x"}))
    for _ in range(MAX_RECEIVES - 1):
        assert service.consumer.poll([gone]) == []  # kept on the queue for another try
        visible_now(stack)
    [dead] = service.consumer.poll([gone])
    assert dead.status == "dead_letter" and dead.delivery_id == message
    assert dead.error is not None and "StateMachineDoesNotExist" in dead.error["type"]
    visible_now(stack)
    assert service.consumer.poll([gone]) == []


def test_messages_on_a_queue_without_a_trigger_wait(stack: Stack) -> None:
    service = stack.service()
    service.send("nobody-reads-this", "hello")
    assert service.consumer.poll(service.specs) == []
    assert service.store.waiting()["nobody-reads-this"] == 1
