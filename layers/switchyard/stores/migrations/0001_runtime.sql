-- Step runtime: idempotency records, budget ledger, large outputs, tool audit and policy state,
-- rate-limit windows, agent turn journal.

CREATE TABLE idempotency_records (
    key                           text PRIMARY KEY,
    status                        text NOT NULL,
    expiry_timestamp              bigint NOT NULL,       -- seconds since the epoch
    in_progress_expiry_timestamp  bigint,                -- milliseconds since the epoch
    response_data                 text,
    payload_hash                  text
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (expiry_timestamp);

CREATE TABLE budget_scopes (
    scope            text PRIMARY KEY,                   -- run:<id>, step:<key>, tenant_day:<tenant>:<date>
    limit_micros     bigint,                             -- null: no money limit
    spent_micros     bigint NOT NULL DEFAULT 0,
    reserved_micros  bigint NOT NULL DEFAULT 0,
    tokens           bigint NOT NULL DEFAULT 0,
    CHECK (reserved_micros >= 0)
);

CREATE TABLE budget_steps (
    scope  text PRIMARY KEY,
    steps  bigint NOT NULL DEFAULT 0
);

-- Open reservations only: settling or releasing one deletes it.
CREATE TABLE budget_reservations (
    id             text PRIMARY KEY,
    owner          text NOT NULL,                        -- the step key whose attempts made it
    scopes         text[] NOT NULL,
    amount_micros  bigint NOT NULL,
    model          text,
    step           text,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX budget_reservations_owner ON budget_reservations (owner);

CREATE TABLE budget_attempts (
    scope       text NOT NULL,
    attempt_id  text NOT NULL,
    PRIMARY KEY (scope, attempt_id)
);

CREATE TABLE budget_averages (
    model         text NOT NULL,
    step          text NOT NULL,
    calls         bigint NOT NULL,
    total_micros  bigint NOT NULL,
    PRIMARY KEY (model, step)
);

CREATE TABLE output_blobs (
    key         text PRIMARY KEY,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tool_audit (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    run_id       text NOT NULL,
    step_id      text NOT NULL,
    tool         text NOT NULL,
    call_id      text NOT NULL,
    arguments    jsonb NOT NULL,
    outcome      text NOT NULL,                          -- ok, error, refused, human_required, replayed
    error_type   text,
    message      text,
    duration_ms  double precision NOT NULL
);
CREATE INDEX tool_audit_run ON tool_audit (run_id, id);

CREATE TABLE tool_calls (
    run_id     text NOT NULL,
    call_id    text NOT NULL,
    tool       text NOT NULL,
    args_hash  text NOT NULL,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX tool_calls_tool ON tool_calls (run_id, tool, args_hash);

CREATE TABLE tool_decisions (
    run_id    text NOT NULL,
    call_id   text NOT NULL,
    decision  jsonb NOT NULL,
    PRIMARY KEY (run_id, call_id)
);

CREATE TABLE rate_limits (
    bucket      text PRIMARY KEY,                        -- provider:model
    not_before  double precision NOT NULL                -- seconds since the epoch
);

CREATE TABLE agent_turns (
    step_key  text NOT NULL,
    turn      integer NOT NULL,
    entry     jsonb NOT NULL,
    PRIMARY KEY (step_key, turn)
);
