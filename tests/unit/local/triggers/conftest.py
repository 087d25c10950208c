"""A real engine on a fresh database with one workflow that has every kind of trigger."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from switchyard.engine.engine import Engine
from switchyard.local.engine_client import EngineCommands
from switchyard.local.stack import local_engine
from switchyard.local.triggers import TriggerService, trigger_specs
from switchyard.local.workflows import Installed, install
from tests.pg import fresh_database
from tests.unit.api.support import handler_environment

WORKFLOW = """\
switchyard: 1
name: {name}
version: 1
inputs:
  body: {type: string}
triggers:
  - type: schedule
    cron: "0 9 * * *"
    timezone: Europe/Berlin
    input: {body: "{{ schedule.time }}"}
  - type: event
    pattern: {source: [shop.tickets], detail-type: [TicketCreated]}
    input: {body: "{{ event.detail.text }}"}
  - {type: webhook, secret: "env:TEST_WEBHOOK_SECRET", input: {body: "{{ body.text }}"}}
  - {type: queue, queue: tickets, input: {body: "{{ message.body.text }}"}}
steps:
  look: {type: human_gate, message: "{{ inputs.body }}", assignee: lee}
"""
SECRET = "it-is-a-secret"


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Stack:
    conninfo: str
    engine: Engine
    pool: ConnectionPool
    installed: Installed
    clock: Clock

    def service(self, **kwargs: Any) -> TriggerService:
        specs = trigger_specs([(self.installed.workflow, self.installed.machine_arn)])
        return TriggerService(
            self.pool,
            EngineCommands(self.engine),
            specs,
            clock=self.clock,
            environ={"TEST_WEBHOOK_SECRET": SECRET},
            **kwargs,
        )

    @property
    def name(self) -> str:
        return self.installed.workflow.name

    def key(self, kind: str) -> str:
        index = ["schedule", "event", "webhook", "queue"].index(kind)
        return f"{self.name}-{kind}-{index}"

    def runs(self) -> dict[str, Any]:
        """run id -> input, of every run of this test's workflow."""
        with psycopg.connect(self.conninfo) as conn:
            rows = conn.execute(
                "SELECT run_id, input FROM workflow_runs WHERE workflow = %s", (self.name,)
            ).fetchall()
        return {str(run_id): data for run_id, data in rows}


@pytest.fixture(scope="module")
def base() -> Iterator[tuple[str, Engine, ConnectionPool]]:
    # approval_notify records its gate in this database: the handlers' caches built for it
    with fresh_database() as conninfo, handler_environment(conninfo):
        engine = local_engine(conninfo)
        engine.start()
        pool = ConnectionPool(conninfo, min_size=1, max_size=4, open=True)
        try:
            yield conninfo, engine, pool
        finally:
            pool.close()
            engine.close()


@pytest.fixture
def stack(base: tuple[str, Engine, ConnectionPool], tmp_path: Path) -> Stack:
    """Each test its own workflow (its own trigger keys and runs) on the module's engine."""
    conninfo, engine, pool = base
    name = f"intake-{uuid.uuid4().hex[:8]}"
    (tmp_path / "intake.yaml").write_text(WORKFLOW.replace("{name}", name))
    with engine.read() as store:
        installed = install(store, engine.arns, tmp_path / "intake.yaml")
    return Stack(conninfo, engine, pool, installed, Clock(datetime(2026, 12, 1, 6, 0, tzinfo=UTC)))
