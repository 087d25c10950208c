-- When the dashboard last read a running deployed execution's history to catch its run records
-- up (switchyard/records/catch_up.py, the only writer): at most one read per execution per
-- interval, however many pages poll the run.

CREATE TABLE execution_reads (
    execution_id  bigint PRIMARY KEY REFERENCES sfn_executions (id) ON DELETE CASCADE,
    read_at       timestamptz NOT NULL
);
