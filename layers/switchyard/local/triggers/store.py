"""The tables of local triggers (migrations 0011, 0012): schedule fires, deliveries, queue messages,
and the triggers of installed workflows. This module is their only writer; SQL reads as SQL, the
class only orchestrates."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

DeliveryStatus = Literal["started", "duplicate", "dead_letter"]
TriggerKind = Literal["schedule", "event", "webhook", "queue"]

LAST_FIRE_SQL = "SELECT last_slot FROM trigger_fires WHERE trigger_key = %s"
RECORD_FIRE_SQL = """
INSERT INTO trigger_fires (trigger_key, last_slot) VALUES (%s, %s)
ON CONFLICT (trigger_key) DO UPDATE SET last_slot = GREATEST(trigger_fires.last_slot,
    EXCLUDED.last_slot), updated_at = now()
"""
RECORD_DELIVERY_SQL = """
INSERT INTO trigger_deliveries (trigger_key, workflow, kind, delivery_id, run_id, status, error,
    payload)
VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb)
"""
RECENT_DELIVERIES_SQL = """
SELECT trigger_key, workflow, kind, delivery_id, run_id, status, error, created_at
FROM trigger_deliveries WHERE trigger_key = %s ORDER BY created_at DESC, id DESC LIMIT %s
"""
DEAD_LETTERS_SQL = """
SELECT trigger_key, workflow, kind, delivery_id, run_id, status, error, payload, created_at
FROM trigger_deliveries WHERE status = 'dead_letter' ORDER BY created_at DESC, id DESC LIMIT %s
"""
HANDLED_SQL = """
SELECT 1 FROM trigger_deliveries WHERE trigger_key = %s AND delivery_id = %s
    AND status IN ('started', 'duplicate', 'dead_letter') LIMIT 1
"""
SEND_SQL = "INSERT INTO queue_messages (id, queue, body) VALUES (%s, %s, %s)"
CLAIM_SQL = """
UPDATE queue_messages SET visible_at = now() + %s * interval '1 second',
    receive_count = receive_count + 1
WHERE id IN (
    SELECT id FROM queue_messages
    WHERE queue = ANY(%s) AND done_at IS NULL AND visible_at <= now()
    ORDER BY sent_at, id LIMIT %s FOR UPDATE SKIP LOCKED
)
RETURNING id, queue, body, sent_at, receive_count
"""
DONE_SQL = "UPDATE queue_messages SET done_at = now() WHERE id = %s"
RELEASE_SQL = """
UPDATE queue_messages SET visible_at = now() + %s * interval '1 second' WHERE id = %s
"""
RECORD_INSTALLED_SQL = """
INSERT INTO workflow_triggers (workflow, version, machine_arn, inputs, triggers)
VALUES (%s, %s, %s, %s::jsonb, %s::jsonb)
ON CONFLICT (workflow, version) DO UPDATE SET machine_arn = EXCLUDED.machine_arn,
    inputs = EXCLUDED.inputs, triggers = EXCLUDED.triggers, installed_at = now()
"""
INSTALLED_SQL = """
SELECT DISTINCT ON (workflow) workflow, version, machine_arn, inputs, triggers
FROM workflow_triggers ORDER BY workflow, version DESC
"""
WAITING_SQL = """
SELECT queue, count(*) FROM queue_messages WHERE done_at IS NULL GROUP BY queue
"""


@dataclass(frozen=True, slots=True)
class Delivery:
    trigger_key: str
    workflow: str
    kind: TriggerKind
    delivery_id: str
    run_id: str
    status: DeliveryStatus
    error: dict[str, Any] | None = None
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class QueueMessage:
    id: str
    queue: str
    body: str
    sent_at: datetime
    receive_count: int


@dataclass(frozen=True, slots=True)
class InstalledTriggers:
    """The triggers of one installed workflow version, as `workflow_triggers` keeps them."""

    workflow: str
    version: int
    machine_arn: str
    inputs: dict[str, Any]
    triggers: list[dict[str, Any]]
    """Each trigger as its model dumps it (`Trigger.model_dump(mode="json")`)."""


def record_installed(conn: psycopg.Connection[Any], installed: InstalledTriggers) -> None:
    """Remember what a workflow version installed on `conn` triggers (`local.workflows.install`);
    a version with no triggers is recorded too: as the newest, it turns the older ones' off."""
    conn.execute(
        RECORD_INSTALLED_SQL,
        (
            installed.workflow,
            installed.version,
            installed.machine_arn,
            json.dumps(installed.inputs),
            json.dumps(installed.triggers),
        ),
    )


def trigger_dead_letters(conn: psycopg.Connection[Any], limit: int = 10) -> list[dict[str, Any]]:
    """The latest dead letters, on a plain connection (`switchyard runs list`)."""
    rows = conn.cursor(row_factory=dict_row).execute(DEAD_LETTERS_SQL, (limit,)).fetchall()
    return [
        {k: row[k] for k in ("trigger_key", "workflow", "kind", "delivery_id", "error")}
        for row in rows
    ]


def _delivery(row: dict[str, Any]) -> Delivery:
    return Delivery(
        trigger_key=row["trigger_key"],
        workflow=row["workflow"],
        kind=row["kind"],
        delivery_id=row["delivery_id"],
        run_id=row["run_id"],
        status=row["status"],
        error=row["error"],
        created_at=row["created_at"],
    )


class TriggerStore:
    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    # --- schedules ---------------------------------------------------------------------------

    def last_fire(self, trigger_key: str) -> datetime | None:
        with self.pool.connection() as conn:
            row = conn.execute(LAST_FIRE_SQL, (trigger_key,)).fetchone()
        return row[0] if row else None

    def record_fire(self, trigger_key: str, slot: datetime) -> None:
        with self.pool.connection() as conn:
            conn.execute(RECORD_FIRE_SQL, (trigger_key, slot))

    # --- installed workflows -------------------------------------------------------------------

    def installed(self) -> list[InstalledTriggers]:
        """The newest installed version of each workflow, with its triggers (maybe none)."""
        with self.pool.connection() as conn:
            rows = conn.cursor(row_factory=dict_row).execute(INSTALLED_SQL).fetchall()
        return [InstalledTriggers(**row) for row in rows]

    # --- deliveries --------------------------------------------------------------------------

    def record(self, delivery: Delivery, payload: Any = None) -> None:
        with self.pool.connection() as conn:
            conn.execute(
                RECORD_DELIVERY_SQL,
                (
                    delivery.trigger_key,
                    delivery.workflow,
                    delivery.kind,
                    delivery.delivery_id,
                    delivery.run_id,
                    delivery.status,
                    json.dumps(delivery.error) if delivery.error is not None else None,
                    json.dumps(payload, default=str) if payload is not None else None,
                ),
            )

    def handled(self, trigger_key: str, delivery_id: str) -> bool:
        with self.pool.connection() as conn:
            return conn.execute(HANDLED_SQL, (trigger_key, delivery_id)).fetchone() is not None

    def recent(self, trigger_key: str, limit: int = 5) -> list[Delivery]:
        with self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(RECENT_DELIVERIES_SQL, (trigger_key, limit))
                .fetchall()
            )
        return [_delivery(row) for row in rows]

    def dead_letters(self, limit: int = 50) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            rows = conn.cursor(row_factory=dict_row).execute(DEAD_LETTERS_SQL, (limit,)).fetchall()
        return [
            {
                **{k: row[k] for k in ("trigger_key", "workflow", "kind", "delivery_id", "run_id")},
                "error": row["error"],
                "payload": row["payload"],
                "created_at": row["created_at"].isoformat(),
            }
            for row in rows
        ]

    # --- queues ------------------------------------------------------------------------------

    def send(self, queue: str, body: str) -> str:
        message_id = str(uuid.uuid4())
        with self.pool.connection() as conn:
            conn.execute(SEND_SQL, (message_id, queue, body))
        return message_id

    def claim(
        self, queues: list[str], *, visibility: timedelta, limit: int = 10
    ) -> list[QueueMessage]:
        if not queues:
            return []
        with self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(CLAIM_SQL, (visibility.total_seconds(), queues, limit))
                .fetchall()
            )
        return [QueueMessage(**row) for row in rows]

    def done(self, message_id: str) -> None:
        with self.pool.connection() as conn:
            conn.execute(DONE_SQL, (message_id,))

    def release(self, message_id: str, delay: timedelta) -> None:
        with self.pool.connection() as conn:
            conn.execute(RELEASE_SQL, (delay.total_seconds(), message_id))

    def waiting(self) -> dict[str, int]:
        with self.pool.connection() as conn:
            return {str(q): int(n) for q, n in conn.execute(WAITING_SQL).fetchall()}
