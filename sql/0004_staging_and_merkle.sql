-- Staging of a batch being committed, and the Merkle trees the engine maintains.
--
-- Spark tasks write their part of a batch's outcome here in parallel, each task in one
-- transaction of its own, under its `slot` (which task of which stage wrote it); a task that
-- runs again first deletes its slot. The batch's commit then moves everything into the ledger
-- tables in one transaction and empties these tables. They are UNLOGGED: nothing in them has to
-- survive a crash (an interrupted batch is run again), so they skip the write-ahead log.

CREATE UNLOGGED TABLE ledger_stage_events (
    batch_id    bigint NOT NULL,
    slot        text NOT NULL,
    position    integer NOT NULL,
    source_file text NOT NULL,
    line_number integer NOT NULL,
    stream      text,
    request_id  text,
    payload     jsonb,
    outcome     text NOT NULL
);

CREATE UNLOGGED TABLE ledger_stage_change_log (
    batch_id   bigint NOT NULL,
    slot       text NOT NULL,
    position   integer NOT NULL,
    seq        integer NOT NULL,
    request_id text NOT NULL,
    table_name text NOT NULL,
    key        text NOT NULL,
    before     jsonb,
    after      jsonb
);

CREATE UNLOGGED TABLE ledger_stage_results (
    batch_id   bigint NOT NULL,
    slot       text NOT NULL,
    position   integer NOT NULL,
    seq        integer NOT NULL,
    stream     text NOT NULL,
    request_id text NOT NULL,
    payload    jsonb NOT NULL
);

CREATE UNLOGGED TABLE ledger_stage_rejections (
    batch_id   bigint NOT NULL,
    slot       text NOT NULL,
    position   integer NOT NULL,
    stream     text,
    request_id text,
    reason     text NOT NULL,
    detail     text NOT NULL,
    raw_input  bytea NOT NULL
);

CREATE UNLOGGED TABLE ledger_stage_duplicates (
    batch_id   bigint NOT NULL,
    slot       text NOT NULL,
    position   integer NOT NULL,
    stream     text,
    request_id text NOT NULL,
    kind       text NOT NULL
);

CREATE UNLOGGED TABLE ledger_stage_requests (
    batch_id    bigint NOT NULL,
    slot        text NOT NULL,
    request_id  text NOT NULL,
    position    integer NOT NULL,
    fingerprint text NOT NULL,
    outcome     text NOT NULL
);

-- The net change of a row over one round of a batch (round -1: the settling of its deferred
-- adds). Later rounds read earlier rounds' writes from here; the commit applies, per row, the
-- first round's `before` check and the last round's `after`.
CREATE UNLOGGED TABLE ledger_stage_rows (
    batch_id   bigint NOT NULL,
    slot       text NOT NULL,
    table_name text NOT NULL,
    key        text NOT NULL,
    round      integer NOT NULL,
    before     jsonb,
    after      jsonb
);
CREATE INDEX ledger_stage_rows_row ON ledger_stage_rows (table_name, key, round);

-- The bucket digests of each ledger table's Merkle tree (ledger_engine.audit.merkle), kept up
-- to date by every commit; buckets whose digest is 0 have no row.
CREATE TABLE ledger_merkle_buckets (
    table_name text NOT NULL,
    bucket     integer NOT NULL CHECK (bucket >= 0 AND bucket < 4096),
    digest     text NOT NULL CHECK (length(digest) = 64),
    PRIMARY KEY (table_name, bucket)
);
