-- Commands for the engine from other processes (the CLI): start a run, answer a gate, stop a
-- run. The engine LISTENs on `switchyard_commands` and writes each result back.

CREATE TABLE engine_commands (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL,                 -- start stop redrive task_success task_failure task_heartbeat
    payload     jsonb NOT NULL,
    status      text NOT NULL DEFAULT 'pending', -- pending taken done failed
    result      jsonb,
    error       jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    done_at     timestamptz
);
CREATE INDEX engine_commands_pending ON engine_commands (id) WHERE status = 'pending';

CREATE TABLE engine_instances (
    pid          integer NOT NULL,
    host         text NOT NULL,
    sfn_url      text,
    api_url      text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, pid)
);
