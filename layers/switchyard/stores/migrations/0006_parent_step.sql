-- A sub-workflow run names the parent's step that started it, so that the child's spend is also
-- counted on that step's record and on every ancestor run's totals.

ALTER TABLE workflow_runs ADD COLUMN parent_step text;
