"""Triggers on the local engine, together: which triggers exist, the scheduler and the queue
consumer on one background thread, webhook and event deliveries, and what `triggers list` shows.

Every engine process builds one `TriggerService` beside its engine (`local.triggers.runtime`):
`switchyard dev` with the HTTP faces (`local.triggers.http`), a background engine without. The
triggers served are those of the workflows installed in the database (`workflow_triggers`), read
afresh each round, so a workflow installed while the engine runs is served at once."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.local.triggers.queue import QueueConsumer
from switchyard.local.triggers.schedule import Scheduler, next_slot
from switchyard.local.triggers.starter import Starter, Starts, TriggerSpec, specs_of_workflow
from switchyard.local.triggers.store import Delivery, TriggerStore
from switchyard.model import EventTrigger, QueueTrigger, ScheduleTrigger, WebhookTrigger
from switchyard.triggers.patterns import PatternError, matches
from switchyard.triggers.webhook import (
    WebhookConfig,
    WebhookConfigError,
    WebhookRequest,
    WebhookResponse,
    handle_webhook,
    resolve_secret,
)

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]
RUN_EXISTS_SQL = "SELECT 1 FROM sfn_executions WHERE name = %s LIMIT 1"


def utc_now() -> datetime:
    return datetime.now(UTC)


def always() -> bool:
    return True


class _AlreadyExistsError(Exception):
    """What `handle_webhook` reads as Step Functions' ExecutionAlreadyExists."""

    response = {"Error": {"Code": "ExecutionAlreadyExists"}}


@dataclass
class _EngineAsStepFunctions:
    """The one Step Functions call `handle_webhook` makes, answered by the local engine: a run
    of that name that exists at all (running or ended) is ExecutionAlreadyExists, so a repeated
    delivery is 200 "duplicate", never a second 202."""

    service: TriggerService

    def start_execution(self, *, stateMachineArn: str, name: str, input: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        if self.service.run_exists(name):
            raise _AlreadyExistsError(name)
        from switchyard.engine import errors as engine_errors

        try:
            arn = self.service.engine.start_execution(stateMachineArn, name, json.loads(input), {})
        except engine_errors.ExecutionAlreadyExists:
            raise _AlreadyExistsError(name) from None
        return {"executionArn": arn}


@dataclass
class TriggerService:
    pool: ConnectionPool
    engine: Starts
    specs: list[TriggerSpec] | None = None
    """The triggers served; None: those of the workflows installed in the database (`current`)."""
    clock: Clock = utc_now
    poll_seconds: float = 1.0
    environ: dict[str, str] | None = None
    """Where `env:NAME` webhook secrets are read; None: the process environment."""
    base_url: str = ""
    """The REST server's URL, for the webhook URLs `triggers list` shows."""
    ready: Callable[[], bool] = always
    """Whether the engine can start runs now; a round waits while it cannot (another engine
    owns the database, or it waits out an outage), so nothing is fired only to fail."""
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.store = TriggerStore(self.pool)
        self.starter = Starter(self.engine, self, self.store)
        self.scheduler = Scheduler(self.starter, self.store)
        self.consumer = QueueConsumer(self.starter, self.store)

    def current(self) -> list[TriggerSpec]:
        """The triggers served now: `specs`, else the installed workflows' (newest versions)."""
        if self.specs is not None:
            return self.specs
        found: list[TriggerSpec] = []
        for installed in self.store.installed():
            try:
                found += specs_of_workflow(
                    installed.workflow,
                    installed.version,
                    installed.machine_arn,
                    installed.inputs,
                    installed.triggers,
                )
            except ValueError as exc:  # recorded by another switchyard version
                log.warning("skipped the triggers of %s: %s", installed.workflow, exc)
        return found

    def run_exists(self, run_id: str) -> bool:
        with self.pool.connection() as conn:
            return conn.execute(RUN_EXISTS_SQL, (run_id,)).fetchone() is not None

    # --- the background loop -----------------------------------------------------------------

    def tick(self) -> list[Delivery]:
        """One round: due schedules, then ready queue messages."""
        specs = self.current()
        fired = self.scheduler.tick(specs, self.clock())
        return fired + self.consumer.poll(specs)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="switchyard-triggers", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.ready():
                try:
                    self.tick()
                except Exception:  # a database outage: log and try again next round
                    log.exception("trigger round failed; trying again")
            self._stop.wait(self.poll_seconds)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # --- deliveries from HTTP ----------------------------------------------------------------

    def webhook(self, workflow: str, request: WebhookRequest) -> WebhookResponse:
        specs = self.current()
        spec = next((s for s in specs if s.workflow == workflow and s.kind == "webhook"), None)
        if spec is None:
            known = sorted({s.workflow for s in specs if s.kind == "webhook"})
            return WebhookResponse(
                404,
                {
                    "error": f"workflow {workflow!r} has no webhook trigger "
                    f"(webhooks: {', '.join(known) or 'none'})"
                },
            )
        assert isinstance(spec.trigger, WebhookTrigger)
        config = WebhookConfig(
            workflow, spec.machine_arn, spec.trigger.secret, dict(spec.trigger.input)
        )
        try:
            secret = resolve_secret(
                config.secret, environ=self.environ if self.environ is not None else os.environ
            )
        except WebhookConfigError as exc:
            return WebhookResponse(503, {"error": str(exc)})
        except Exception as exc:  # Secrets Manager unreachable: the sender may retry
            return WebhookResponse(503, {"error": f"webhook secret could not be read: {exc}"})
        letters: list[dict[str, Any]] = []
        response = handle_webhook(
            request,
            config,
            secret=secret,
            sfn=_EngineAsStepFunctions(self),
            on_failure=letters.append,
            now=lambda: self.clock().timestamp(),
        )
        name = response.body.get("execution_name")
        if name:
            response.body["run_id"] = name
            delivery_id = request.headers.get("x-switchyard-delivery", "")
            status: Any = {202: "started", 200: "duplicate"}.get(response.status, "dead_letter")
            error = letters[0]["error"] if letters else None
            self.store.record(
                Delivery(spec.key, workflow, "webhook", delivery_id, str(name), status, error),
                letters[0] if letters else None,
            )
        return response

    def event(self, event: dict[str, Any]) -> list[Delivery]:
        """Start every workflow whose `event` trigger's pattern matches."""
        delivered = []
        for spec in self.current():
            if not isinstance(spec.trigger, EventTrigger):
                continue
            try:
                matched = matches(spec.trigger.pattern, event)
            except PatternError:
                log.warning("trigger %s has a pattern EventBridge would refuse", spec.key)
                continue
            if matched:
                delivered.append(self.starter.deliver(spec, str(event["id"]), event))
        return delivered

    def send(self, queue: str, body: str) -> str:
        return self.store.send(queue, body)

    # --- what there is -----------------------------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        """Each trigger, its next fire time or URL, and its last deliveries."""
        now = self.clock()
        waiting = self.store.waiting()
        out = []
        for spec in self.current():
            trigger = spec.trigger
            entry: dict[str, Any] = {
                "key": spec.key,
                "workflow": spec.workflow,
                "version": spec.version,
                "type": spec.kind,
            }
            if isinstance(trigger, ScheduleTrigger):
                entry.update(
                    cron=trigger.cron,
                    timezone=trigger.timezone,
                    next_fire=next_slot(trigger, now).isoformat(),
                    last_fire=_iso(self.store.last_fire(spec.key)),
                )
            elif isinstance(trigger, WebhookTrigger):
                entry["url"] = f"{self.base_url}/webhooks/{spec.workflow}"
            elif isinstance(trigger, EventTrigger):
                entry["pattern"] = trigger.pattern
            elif isinstance(trigger, QueueTrigger):
                entry.update(
                    queue=trigger.queue,
                    url=f"{self.base_url}/queues/{trigger.queue}/messages",
                    waiting=waiting.get(trigger.queue, 0),
                )
            entry["deliveries"] = [
                {
                    "delivery_id": d.delivery_id,
                    "run_id": d.run_id,
                    "status": d.status,
                    "error": d.error,
                    "at": _iso(d.created_at),
                }
                for d in self.store.recent(spec.key)
            ]
            out.append(entry)
        return out


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
