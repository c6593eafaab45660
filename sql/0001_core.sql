-- The system of record's own tables: batches, the event log, the change log, results,
-- rejections, duplicates and executed request ids. Every batch writes all of them in one
-- transaction; the batch row is inserted last, so foreign keys to it are deferred.

CREATE TABLE ledger_batches (
    batch_id          bigint PRIMARY KEY CHECK (batch_id >= 0),
    ledger            text NOT NULL,
    input_fingerprint text NOT NULL,
    input_files       jsonb NOT NULL,
    events_ingested   integer NOT NULL CHECK (events_ingested >= 0),
    applied           integer NOT NULL CHECK (applied >= 0),
    rejected          integer NOT NULL CHECK (rejected >= 0),
    duplicates        integer NOT NULL CHECK (duplicates >= 0),
    changes           integer NOT NULL CHECK (changes >= 0),
    results           integer NOT NULL CHECK (results >= 0),
    merkle_roots      jsonb NOT NULL,
    prev_hash         text NOT NULL,
    batch_hash        text NOT NULL UNIQUE,
    execute_seconds   double precision NOT NULL,
    committed_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (events_ingested = applied + rejected + duplicates)
);

-- Every ingested line, in batch order. `payload` is NULL where the line was not a storable
-- JSON object; the raw bytes of such lines are kept in ledger_rejections.
CREATE TABLE ledger_events (
    batch_id    bigint NOT NULL REFERENCES ledger_batches DEFERRABLE INITIALLY DEFERRED,
    position    integer NOT NULL CHECK (position >= 0),
    source_file text NOT NULL,
    line_number integer NOT NULL CHECK (line_number >= 1),
    stream      text,
    request_id  text,
    payload     jsonb,
    outcome     text NOT NULL CHECK (outcome IN ('applied', 'rejected', 'duplicate')),
    PRIMARY KEY (batch_id, position)
);
CREATE INDEX ledger_events_request_id ON ledger_events (request_id);
-- An executed (applied or rejected) request id is taken for good; invalid ids are stored NULL.
CREATE UNIQUE INDEX ledger_events_executed_request_id ON ledger_events (request_id)
    WHERE outcome <> 'duplicate';

-- One row per row write of an applied transaction: value before and after, in commit order.
CREATE TABLE ledger_change_log (
    batch_id   bigint NOT NULL REFERENCES ledger_batches DEFERRABLE INITIALLY DEFERRED,
    position   integer NOT NULL,
    seq        integer NOT NULL,
    request_id text NOT NULL,
    table_name text NOT NULL,
    key        text NOT NULL,
    before     jsonb,
    after      jsonb,
    PRIMARY KEY (batch_id, position, seq),
    FOREIGN KEY (batch_id, position) REFERENCES ledger_events DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX ledger_change_log_row ON ledger_change_log (table_name, key, batch_id, position);

CREATE TABLE ledger_results (
    batch_id   bigint NOT NULL REFERENCES ledger_batches DEFERRABLE INITIALLY DEFERRED,
    position   integer NOT NULL,
    seq        integer NOT NULL,
    stream     text NOT NULL,
    request_id text NOT NULL,
    payload    jsonb NOT NULL,
    PRIMARY KEY (batch_id, position, seq),
    FOREIGN KEY (batch_id, position) REFERENCES ledger_events DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE ledger_rejections (
    batch_id   bigint NOT NULL REFERENCES ledger_batches DEFERRABLE INITIALLY DEFERRED,
    position   integer NOT NULL,
    stream     text,
    request_id text,
    reason     text NOT NULL,
    detail     text NOT NULL,
    raw_input  bytea NOT NULL,
    PRIMARY KEY (batch_id, position),
    FOREIGN KEY (batch_id, position) REFERENCES ledger_events DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE ledger_duplicates (
    batch_id   bigint NOT NULL REFERENCES ledger_batches DEFERRABLE INITIALLY DEFERRED,
    position   integer NOT NULL,
    stream     text,
    request_id text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('exists', 'exists_with_different_payload')),
    PRIMARY KEY (batch_id, position),
    FOREIGN KEY (batch_id, position) REFERENCES ledger_events DEFERRABLE INITIALLY DEFERRED
);

-- Every request id that was executed (applied or rejected), with the fingerprint of its first
-- event, so that retries in later batches and runs are recognised as duplicates.
CREATE TABLE ledger_requests (
    request_id  text PRIMARY KEY,
    batch_id    bigint NOT NULL,
    position    integer NOT NULL,
    fingerprint text NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('applied', 'rejected')),
    FOREIGN KEY (batch_id, position) REFERENCES ledger_events DEFERRABLE INITIALLY DEFERRED
);
