-- One pipeline run at a time per system of record, with a fencing token
-- (ledger_engine.store.lease).
--
-- A run holds a session advisory lock for as long as it runs, and taking it increments
-- `ledger_fence.epoch`. Every write of the run (each Spark task's staging, the batch commit)
-- first reads the epoch under a share lock and goes on only if it is still its own, so a run
-- that lost the lock (killed, or cut off from the server while its tasks went on) can never
-- write after the run that took the lock from it.

CREATE TABLE ledger_fence (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch     bigint NOT NULL CHECK (epoch >= 0)
);
INSERT INTO ledger_fence (singleton, epoch) VALUES (true, 0);

-- Every run that took the lease: who, when, and how it ended. A run whose holder died keeps
-- `ended_at` NULL until the next run takes the lease and marks it `abandoned`.
CREATE TABLE ledger_runs (
    epoch      bigint PRIMARY KEY CHECK (epoch > 0),
    holder     text NOT NULL,
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at   timestamptz,
    outcome    text CHECK (outcome IN ('finished', 'failed', 'abandoned')),
    CHECK ((ended_at IS NULL) = (outcome IS NULL))
);
