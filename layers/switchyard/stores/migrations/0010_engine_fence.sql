-- The engine's fencing epoch: one row, owned by switchyard/engine/fencing.py. An engine that takes
-- the database over increments `epoch`; every transaction an engine commits first updates `batch`
-- where the epoch is still its own. The claim and that update lock the same row, so every commit
-- of the old owner comes before the new owner's claim and none after (docs/engine.md, "Fencing").
-- `batch` also tells an engine whose connection died during a commit whether the commit happened.

CREATE TABLE engine_fence (
    id     boolean PRIMARY KEY DEFAULT true CHECK (id),
    epoch  bigint NOT NULL,
    batch  bigint NOT NULL DEFAULT 0
);
INSERT INTO engine_fence (id, epoch) VALUES (true, 0);
