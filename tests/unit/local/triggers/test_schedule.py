"""`schedule` triggers: cron in its time zone, the last fire stored, a restart neither skips nor
repeats a slot, a slot missed while down fires once (docs/triggers.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.unit.local.triggers.conftest import Stack


def test_a_new_schedule_fires_at_its_next_slot_in_its_time_zone(stack: Stack) -> None:
    service = stack.service()
    assert service.tick() == []  # first seen at 06:00Z: counts from now, fires nothing past
    stack.clock.now = datetime(2026, 12, 1, 7, 59, 59, tzinfo=UTC)
    assert service.tick() == []
    stack.clock.now = datetime(2026, 12, 1, 8, 0, 1, tzinfo=UTC)  # 09:00 in Berlin (CET)
    [fired] = service.tick()
    assert fired.status == "started" and fired.delivery_id == "2026-12-01T08:00:00Z"
    assert stack.runs() == {fired.run_id: {"body": "2026-12-01T08:00:00Z"}}
    assert fired.run_id == stack.service().specs[0].run_id("2026-12-01T08:00:00Z")
    assert service.tick() == []  # the same slot never fires twice


def test_a_restart_neither_repeats_nor_skips_and_a_missed_slot_fires_once(stack: Stack) -> None:
    stack.service().tick()  # registered at 06:00Z
    stack.clock.now = datetime(2026, 12, 1, 8, 0, 5, tzinfo=UTC)
    [first] = stack.service().tick()
    restarted = stack.service()  # a new engine process: only the database remembers
    assert restarted.tick() == []
    # down from Dec 1 to Dec 4 10:00Z: the slots of Dec 2, 3 and 4 were missed; only the
    # latest of them fires, once
    stack.clock.now = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
    [late] = stack.service().tick()
    assert late.delivery_id == "2026-12-04T08:00:00Z"
    assert stack.service().tick() == []
    assert set(stack.runs()) == {first.run_id, late.run_id}


def test_a_crash_between_the_start_and_the_stored_fire_starts_no_second_run(
    stack: Stack,
) -> None:
    service = stack.service()
    service.tick()
    spec = service.specs[0]
    slot = "2026-12-01T08:00:00Z"
    # the run was started but the engine died before recording the fire
    service.starter.deliver(spec, slot, {"time": slot})
    stack.clock.now = datetime(2026, 12, 1, 8, 0, 1, tzinfo=UTC)
    [again] = stack.service().tick()
    assert again.status == "duplicate" and again.run_id == spec.run_id(slot)
    assert len(stack.runs()) == 1


def test_triggers_list_shows_the_next_fire_and_the_last_deliveries(stack: Stack) -> None:
    service = stack.service(base_url="http://127.0.0.1:8080")
    service.tick()
    stack.clock.now += timedelta(hours=2, seconds=1)
    service.tick()
    listed = {t["key"]: t for t in service.describe()}
    schedule = listed[stack.key("schedule")]
    assert schedule["next_fire"] == "2026-12-02T08:00:00+00:00"
    assert schedule["deliveries"][0]["status"] == "started"
    assert listed[stack.key("webhook")]["url"] == (f"http://127.0.0.1:8080/webhooks/{stack.name}")
    assert listed[stack.key("queue")]["url"].endswith("/queues/tickets/messages")
    assert listed[stack.key("event")]["pattern"]["source"] == ["shop.tickets"]
