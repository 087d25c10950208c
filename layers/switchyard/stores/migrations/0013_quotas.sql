-- Quota counters: per tenant and model, tokens and requests per one-minute window
-- (stores/quota/postgres.py). A counter keeps its current and previous windows; older ones are
-- deleted as it moves on.

CREATE TABLE quota_windows (
    counter       text NOT NULL,                         -- <tenant>:<model>:tokens|requests
    window_start  bigint NOT NULL,                       -- seconds since the epoch, a multiple of 60
    used          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (counter, window_start)
);
