-- Circuit breakers: the state of each downstream circuit (host:<host>, tool:<workflow>/<tool>),
-- shared by every process calling it (stores/breaker/postgres.py).

CREATE TABLE circuit_breakers (
    circuit       text PRIMARY KEY,
    state         text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open')),
    window_start  bigint NOT NULL DEFAULT 0,             -- seconds since the epoch
    calls         integer NOT NULL DEFAULT 0,            -- outcomes counted in that window
    failures      integer NOT NULL DEFAULT 0,
    open_until    double precision NOT NULL DEFAULT 0,   -- refused until then, then half-open
    probe_until   double precision NOT NULL DEFAULT 0,   -- a half-open probe holds it until then
    opened        integer NOT NULL DEFAULT 0,            -- times it opened
    version       bigint NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
