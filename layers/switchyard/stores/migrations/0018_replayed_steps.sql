-- A step of a reset run that replayed the original's recorded result instead of running
-- (switchyard.runtime.replay): the run whose record it replayed. NULL: the step ran.

ALTER TABLE task_runs ADD COLUMN replayed_from text;
