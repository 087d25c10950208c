"""`schedule` triggers on the local engine: cron expressions in their time zone (croniter).

Policy (docs/triggers.md):

- The last slot each schedule fired is stored (`trigger_fires`). A schedule the engine sees for
  the first time starts from now: it fires at its next slot, not for the past.
- At each tick, the latest slot at or before now that is after the last fire fires, once. Slots
  missed while the engine was down are not replayed one by one: the latest of them fires once
  when the engine is back (as EventBridge Scheduler's retries would deliver at most that one late).
- A start the engine fails is tried again at the next rounds, up to `MAX_START_ATTEMPTS` (as
  Scheduler's retry policy, much shorter), then kept as the trigger's dead letter; either way the
  slot is done. An engine that cannot take commands (another owns the database, an outage) is not
  asked at all: the trigger loop waits until it can (`TriggerService.ready`).
- A slot's delivery id is its time (`2026-12-01T09:00:00Z`, as Scheduler's `scheduled-time`), so
  its run id is the same whoever fires it: an engine that crashed after starting the run and
  before storing the fire finds the run on restart and starts no second one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter  # type: ignore[import-untyped]

from switchyard.local.triggers.starter import Starter, TriggerSpec
from switchyard.local.triggers.store import Delivery, TriggerStore
from switchyard.model import ScheduleTrigger

MAX_START_ATTEMPTS = 5
"""Rounds a slot whose start the engine fails is tried in, before it is a dead letter."""


def slot_time(slot: datetime) -> str:
    return slot.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def latest_slot(trigger: ScheduleTrigger, now: datetime) -> datetime:
    """The latest slot of `trigger` at or before `now` (aware, UTC)."""
    local = now.astimezone(ZoneInfo(trigger.timezone)) + timedelta(microseconds=1)
    previous: datetime = croniter(trigger.cron, local).get_prev(datetime)
    return previous.astimezone(UTC)


def next_slot(trigger: ScheduleTrigger, after: datetime) -> datetime:
    """The first slot of `trigger` strictly after `after` (aware, UTC)."""
    local = after.astimezone(ZoneInfo(trigger.timezone))
    following: datetime = croniter(trigger.cron, local).get_next(datetime)
    return following.astimezone(UTC)


class Scheduler:
    def __init__(self, starter: Starter, store: TriggerStore) -> None:
        self.starter = starter
        self.store = store
        self._attempts: dict[tuple[str, datetime], int] = {}
        """Failed starts of a slot in this process (a restart tries afresh: the run id guards)."""

    def tick(self, specs: Sequence[TriggerSpec], now: datetime) -> list[Delivery]:
        """Fire every schedule whose slot has come since its last fire; what was delivered."""
        fired = []
        for spec in specs:
            trigger = spec.trigger
            if not isinstance(trigger, ScheduleTrigger):
                continue
            last = self.store.last_fire(spec.key)
            if last is None:  # first seen: count from now, fire nothing from the past
                self.store.record_fire(spec.key, now)
                continue
            slot = latest_slot(trigger, now)
            if slot <= last:
                continue
            run_id = spec.run_id(slot_time(slot))
            value = {
                "time": slot_time(slot),
                "schedule_arn": f"local:{spec.key}",
                "execution_id": run_id,
                "attempt": 1,
            }
            attempt = self._attempts.get((spec.key, slot), 0) + 1
            delivery = self.starter.deliver(
                spec, slot_time(slot), value, retry_failures=attempt < MAX_START_ATTEMPTS
            )
            if delivery is None:  # the engine failed the start: again next round
                self._attempts[(spec.key, slot)] = attempt
                continue
            self._attempts.pop((spec.key, slot), None)
            fired.append(delivery)
            self.store.record_fire(spec.key, slot)
        return fired
