-- The local engine: state machines and their versions, executions, history, frames (where each
-- execution is), tasks in flight, task tokens, timers, dead letters, and the run records that
-- people query (workflow_runs, task_runs).

CREATE TABLE sfn_definitions (
    hash        text PRIMARY KEY,                 -- sha256 of the definition text
    definition  text NOT NULL
);

CREATE TABLE sfn_state_machines (
    arn              text PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    type             text NOT NULL DEFAULT 'STANDARD',
    definition_hash  text NOT NULL REFERENCES sfn_definitions (hash),
    role_arn         text NOT NULL DEFAULT '',
    revision_id      text NOT NULL,
    description      text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sfn_state_machine_versions (
    arn              text PRIMARY KEY,            -- <machine arn>:<version>
    machine_arn      text NOT NULL REFERENCES sfn_state_machines (arn) ON DELETE CASCADE,
    version          integer NOT NULL,
    definition_hash  text NOT NULL REFERENCES sfn_definitions (hash),
    revision_id      text NOT NULL,
    description      text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (machine_arn, version)
);

CREATE TABLE sfn_aliases (
    arn          text PRIMARY KEY,                -- <machine arn>:<alias name>
    machine_arn  text NOT NULL REFERENCES sfn_state_machines (arn) ON DELETE CASCADE,
    name         text NOT NULL,
    routing      jsonb NOT NULL,                  -- [{stateMachineVersionArn, weight}]
    description  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (machine_arn, name)
);

CREATE TABLE sfn_executions (
    id               bigserial PRIMARY KEY,
    arn              text NOT NULL UNIQUE,
    machine_arn      text NOT NULL,
    version_arn      text,                        -- the version or alias it was started on
    definition_hash  text NOT NULL REFERENCES sfn_definitions (hash),
    name             text NOT NULL,
    status           text NOT NULL,               -- RUNNING SUCCEEDED FAILED TIMED_OUT ABORTED
    input            jsonb,
    output           jsonb,
    error            text,
    cause            text,
    started_at       timestamptz NOT NULL,
    stopped_at       timestamptz,
    redrive_count    integer NOT NULL DEFAULT 0,
    redrive_at       timestamptz,
    parent           jsonb,                       -- a .sync child's parent task
    options          jsonb NOT NULL DEFAULT '{}',
    next_event       integer NOT NULL DEFAULT 1,
    next_frame       integer NOT NULL DEFAULT 1,
    version          integer NOT NULL DEFAULT 0,  -- optimistic concurrency
    UNIQUE (machine_arn, name)
);
CREATE INDEX sfn_executions_open ON sfn_executions (id) WHERE status = 'RUNNING';
CREATE INDEX sfn_executions_by_machine ON sfn_executions (machine_arn, started_at DESC);

CREATE TABLE sfn_history (
    execution_id       bigint NOT NULL REFERENCES sfn_executions (id) ON DELETE CASCADE,
    event_id           integer NOT NULL,
    previous_event_id  integer NOT NULL,
    type               text NOT NULL,
    at                 timestamptz NOT NULL,
    details            jsonb NOT NULL,
    PRIMARY KEY (execution_id, event_id)
);

CREATE TABLE sfn_frames (
    execution_id  bigint NOT NULL REFERENCES sfn_executions (id) ON DELETE CASCADE,
    frame_id      integer NOT NULL,
    status        text NOT NULL,
    data          jsonb NOT NULL,
    PRIMARY KEY (execution_id, frame_id)
);

-- Dispatched tasks whose result has not been recorded: re-dispatched after a crash.
CREATE TABLE sfn_tasks (
    execution_id     bigint NOT NULL REFERENCES sfn_executions (id) ON DELETE CASCADE,
    frame_id         integer NOT NULL,
    attempt          integer NOT NULL,
    kind             text NOT NULL,
    resource         text NOT NULL,
    parameters       jsonb,
    token            text,
    timeout_seconds  integer,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, frame_id, attempt)
);

CREATE TABLE sfn_task_tokens (
    token         text PRIMARY KEY,
    execution_id  bigint NOT NULL REFERENCES sfn_executions (id) ON DELETE CASCADE,
    frame_id      integer NOT NULL
);

CREATE TABLE sfn_timers (
    execution_id  bigint NOT NULL REFERENCES sfn_executions (id) ON DELETE CASCADE,
    frame_id      integer NOT NULL,
    kind          text NOT NULL,
    attempt       integer NOT NULL,
    fire_at       timestamptz NOT NULL,
    PRIMARY KEY (execution_id, frame_id, kind)
);
CREATE INDEX sfn_timers_due ON sfn_timers (fire_at);

CREATE TABLE sfn_dead_letters (
    id            bigserial PRIMARY KEY,
    queue_url     text NOT NULL,
    body          text NOT NULL,
    execution_id  bigint REFERENCES sfn_executions (id) ON DELETE SET NULL,
    sent_at       timestamptz NOT NULL DEFAULT now()
);

-- Runs and step runs, as people query them (switchyard runs list/show, the dashboard).
CREATE TABLE workflow_runs (
    execution_id         bigint PRIMARY KEY REFERENCES sfn_executions (id) ON DELETE CASCADE,
    run_id               text NOT NULL,           -- the execution name
    workflow             text NOT NULL,
    workflow_version     integer,
    tenant               text NOT NULL DEFAULT 'default',
    status               text NOT NULL,           -- running waiting paused succeeded failed cancelled timed_out
    input                jsonb,
    output               jsonb,
    error                jsonb,
    cost_usd             numeric(14, 6) NOT NULL DEFAULT 0,
    input_tokens         bigint NOT NULL DEFAULT 0,
    output_tokens        bigint NOT NULL DEFAULT 0,
    parent_execution_id  bigint REFERENCES sfn_executions (id) ON DELETE SET NULL,
    started_at           timestamptz NOT NULL,
    ended_at             timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    version              integer NOT NULL DEFAULT 0
);
CREATE INDEX workflow_runs_open ON workflow_runs (started_at DESC)
    WHERE status IN ('running', 'waiting', 'paused');
CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow, started_at DESC);
CREATE INDEX workflow_runs_by_run_id ON workflow_runs (run_id);

CREATE TABLE task_runs (
    execution_id       bigint NOT NULL REFERENCES sfn_executions (id) ON DELETE CASCADE,
    step_id            text NOT NULL,
    item               text NOT NULL DEFAULT '', -- '' for a step; the map index or loop iteration
    status             text NOT NULL,            -- running waiting completed skipped failed
    attempts           integer NOT NULL DEFAULT 0,
    input              jsonb,
    output             jsonb,
    error              jsonb,
    cost_usd           numeric(14, 6) NOT NULL DEFAULT 0,
    input_tokens       bigint NOT NULL DEFAULT 0,
    output_tokens      bigint NOT NULL DEFAULT 0,
    cache_read_tokens  bigint NOT NULL DEFAULT 0,
    model              text,
    provider           text,
    worker             text,
    started_at         timestamptz,
    ended_at           timestamptz,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    version            integer NOT NULL DEFAULT 0,
    PRIMARY KEY (execution_id, step_id, item)
);
CREATE INDEX task_runs_open ON task_runs (execution_id) WHERE status IN ('running', 'waiting');
