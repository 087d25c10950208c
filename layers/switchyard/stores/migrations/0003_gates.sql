-- Gates: a person decides (an approval, a paused run, a refused budget, a tool call).
-- The task token stays here, server-side: links and the API name a gate by its id.

CREATE TABLE gates (
    id             text PRIMARY KEY,
    run_id         text NOT NULL,               -- the execution name
    execution_arn  text NOT NULL,
    workflow       text NOT NULL,
    version        integer,
    step_id        text NOT NULL,
    kind           text NOT NULL,               -- approval pause budget human
    tier           integer NOT NULL DEFAULT 0,
    assignee       text,
    channels       text[] NOT NULL DEFAULT '{}',
    message        text,
    show           jsonb,
    allow_edit     boolean NOT NULL DEFAULT false,
    request        jsonb,                       -- a tool call or an error the person looks at
    token          text NOT NULL,
    status         text NOT NULL,               -- open decided superseded
    deadline       timestamptz,
    decision       text,
    reviewer       text,
    note           text,
    edits          jsonb,
    notified       jsonb NOT NULL DEFAULT '[]',
    created_at     timestamptz NOT NULL DEFAULT now(),
    decided_at     timestamptz
);
CREATE INDEX gates_open ON gates (run_id, step_id) WHERE status = 'open';
CREATE INDEX gates_by_execution ON gates (execution_arn);
