-- Continue-as-new: one logical run may be several executions, its segments. A continued segment's
-- record names the logical run (the first segment's run id) and the segment it continues; the
-- first segment keeps logical_run_id NULL (it is its own) and ends with status 'continued'.

ALTER TABLE workflow_runs ADD COLUMN logical_run_id text;
ALTER TABLE workflow_runs ADD COLUMN segment integer NOT NULL DEFAULT 1;
ALTER TABLE workflow_runs ADD COLUMN continued_from text;
CREATE INDEX workflow_runs_segments ON workflow_runs (logical_run_id, segment)
    WHERE logical_run_id IS NOT NULL;
