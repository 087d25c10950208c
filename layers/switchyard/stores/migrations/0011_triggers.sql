-- Triggers on the local engine (switchyard.local.triggers.store owns these tables).
--
-- trigger_fires: the last slot each schedule fired, so a restart neither skips nor repeats one.
-- trigger_deliveries: every delivery a trigger received and what came of it: `started` (its run
--   id derives from the delivery's own id), `duplicate` (that run exists), `dead_letter` (the run
--   could not be started; the delivery is kept here, the trigger's dead letters).
-- queue_messages: the durable queues of `queue` triggers (POST /queues/<queue>/messages,
--   `switchyard send`), consumed at least once: a claimed message is invisible until
--   `visible_at`, and is done when every trigger on its queue has a delivery for it.

CREATE TABLE trigger_fires (
    trigger_key text PRIMARY KEY,
    last_slot   timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE trigger_deliveries (
    id           bigserial PRIMARY KEY,
    trigger_key  text NOT NULL,
    workflow     text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('schedule', 'event', 'webhook', 'queue')),
    delivery_id  text NOT NULL,
    run_id       text NOT NULL,
    status       text NOT NULL CHECK (status IN ('started', 'duplicate', 'dead_letter')),
    error        jsonb,
    payload      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trigger_deliveries_by_trigger ON trigger_deliveries (trigger_key, created_at DESC);
CREATE INDEX trigger_deliveries_dead_letters ON trigger_deliveries (created_at DESC)
    WHERE status = 'dead_letter';

CREATE TABLE queue_messages (
    id            text PRIMARY KEY,
    queue         text NOT NULL,
    body          text NOT NULL,
    sent_at       timestamptz NOT NULL DEFAULT now(),
    visible_at    timestamptz NOT NULL DEFAULT now(),
    receive_count integer NOT NULL DEFAULT 0,
    done_at       timestamptz
);
CREATE INDEX queue_messages_ready ON queue_messages (queue, visible_at) WHERE done_at IS NULL;
