"""`queue` triggers on the local engine: a durable queue in PostgreSQL, consumed at least once.

A message (POST /queues/<queue>/messages, `switchyard send QUEUE BODY`) is claimed for
`VISIBILITY` (other consumers skip it, `FOR UPDATE SKIP LOCKED`), and each trigger on its queue
starts one run for it, named after the message id. A message is done once every trigger has a
delivery for it. A start the engine fails is tried again when the message is visible again, up to
`MAX_RECEIVES` receives (as the SQS queue's redrive policy on AWS), then kept as the trigger's
dead letter; a start that can never work (the trigger's input templates fail, the input does not
fit the workflow) is a dead letter at once. A crash between the start and `done` redelivers the
message, whose run already exists: a duplicate, not a second run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from switchyard.local.triggers.starter import Starter, TriggerSpec
from switchyard.local.triggers.store import Delivery, QueueMessage, TriggerStore
from switchyard.model import QueueTrigger

VISIBILITY = timedelta(seconds=60)
"""How long a claimed message stays invisible (the CDK stack's visibility timeout)."""
MAX_RECEIVES = 5
"""Receives before a failing start becomes a dead letter (infra QUEUE_MAX_RECEIVES)."""
MAX_BODY_BYTES = 256 * 1024
"""The largest message body, as SQS."""


def message_value(message: QueueMessage) -> dict[str, Any]:
    """What the trigger's templates read as `message`: `body` parsed when it is JSON."""
    try:
        body: Any = json.loads(message.body)
    except ValueError:
        body = message.body
    return {
        "id": message.id,
        "body": body,
        "queue": message.queue,
        "sent_at": message.sent_at.isoformat(),
        "receive_count": message.receive_count,
    }


class QueueConsumer:
    def __init__(self, starter: Starter, store: TriggerStore) -> None:
        self.starter = starter
        self.store = store

    def poll(self, specs: Sequence[TriggerSpec], *, limit: int = 10) -> list[Delivery]:
        """Claim what is ready on the triggers' queues and start their runs."""
        by_queue: dict[str, list[TriggerSpec]] = {}
        for spec in specs:
            if isinstance(spec.trigger, QueueTrigger):
                by_queue.setdefault(spec.trigger.queue, []).append(spec)
        delivered: list[Delivery] = []
        for message in self.store.claim(sorted(by_queue), visibility=VISIBILITY, limit=limit):
            final = message.receive_count >= MAX_RECEIVES
            pending = False
            for spec in by_queue[message.queue]:
                if self.store.handled(spec.key, message.id):
                    continue
                delivery = self.starter.deliver(
                    spec, message.id, message_value(message), retry_failures=not final
                )
                if delivery is None:
                    pending = True
                else:
                    delivered.append(delivery)
            if pending:  # the engine failed it: visible again after a pause, as SQS would
                self.store.release(message.id, timedelta(seconds=2**message.receive_count))
            else:
                self.store.done(message.id)
        return delivered
