-- The triggers of installed workflows (switchyard.local.triggers.store owns this table). Installing
-- a workflow (`switchyard.local.workflows.install`: `switchyard dev`, `engine start --workflows`,
-- `run`, the builder) records its triggers here, so whichever engine owns the database fires its
-- schedules and reads its queues: `switchyard dev` and a background engine serve the same set.
-- The newest version of each workflow is the one whose triggers are live (docs/triggers.md).
-- A workflow's state machine deleted (DeleteStateMachine) takes its triggers with it.

CREATE TABLE workflow_triggers (
    workflow     text NOT NULL,
    version      integer NOT NULL,
    machine_arn  text NOT NULL REFERENCES sfn_state_machines (arn) ON DELETE CASCADE,
    inputs       jsonb NOT NULL,   -- the workflow's input schemas: a trigger's input must fit them
    triggers     jsonb NOT NULL,   -- the workflow's `triggers`, in order (a trigger's key is its index)
    installed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow, version)
);
