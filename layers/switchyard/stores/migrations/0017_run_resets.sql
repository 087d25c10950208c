-- Resets (switchyard.local.reset owns this table): a run started again from before one of its
-- steps is a new run; this row links it to the run it resets, which stays as it ended.

CREATE TABLE run_resets (
    run_id          text PRIMARY KEY,             -- the new run (its execution name)
    execution_arn   text NOT NULL,
    reset_from      text NOT NULL,                -- the run it resets
    reset_from_arn  text NOT NULL,
    to_step         text NOT NULL,                -- run afresh, with the steps downstream of it
    workflow        text NOT NULL,
    version         integer NOT NULL,             -- the version the new run runs
    reused          jsonb NOT NULL,               -- the steps that replay recorded results
    reviewer        text,
    note            text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_resets_from ON run_resets (reset_from);
