-- Approvals people act on (docs/approvals.md).

-- The key approval links are signed with when none is configured (a local setup), made here from
-- PostgreSQL's strong random source (two v4 UUIDs: 244 random bits). On AWS the key is in Secrets
-- Manager and this one is never used.
CREATE TABLE approval_keys (
    key_id      text PRIMARY KEY,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO approval_keys (key_id, secret)
VALUES ('local1', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));

-- Slack interaction requests already seen (by the digest of their signature), so that a replayed
-- request is refused inside Slack's 300-second window; older rows are deleted as new ones come.
CREATE TABLE approval_replays (
    digest   text PRIMARY KEY,
    seen_at  timestamptz NOT NULL DEFAULT now()
);

-- A decision that reaches the run through the task-token API (SendTaskSuccess from any port)
-- closes the gate row of its token.
CREATE INDEX gates_open_token ON gates (token) WHERE status = 'open';
