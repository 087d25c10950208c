-- A task token outlives its task: a callback with the token of a closed task (it finished, timed
-- out, or its execution ended) is TaskTimedOut, as on AWS; only a token never issued is
-- TaskDoesNotExist. Closed tokens go with their execution.

ALTER TABLE sfn_task_tokens ADD COLUMN closed_at timestamptz;
