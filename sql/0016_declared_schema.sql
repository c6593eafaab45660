-- The part of the schema the platform generates from a ledger's declarations
-- (ledger_engine.store.schema): each declared table's PostgreSQL table and each declared view.
-- Core migrations (this folder) are the same for every ledger; these depend on the application.

-- Every generated migration, once applied: what it did and the exact SQL it ran.
CREATE TABLE ledger_declared_migrations (
    ledger      text NOT NULL,
    version     integer NOT NULL CHECK (version > 0),
    description text NOT NULL,
    statements  text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (ledger, version)
);

-- Each declared table (its label, as the application wrote it) and the table keeping its rows.
CREATE TABLE ledger_declared_tables (
    ledger     text NOT NULL,
    table_name text NOT NULL,
    sql_name   text NOT NULL UNIQUE,
    key_type   text NOT NULL CHECK (key_type IN ('text', 'bigint')),
    value_type text NOT NULL CHECK (value_type IN ('bigint', 'text', 'jsonb')),
    version    integer NOT NULL,
    PRIMARY KEY (ledger, table_name),
    FOREIGN KEY (ledger, version) REFERENCES ledger_declared_migrations
);

-- Each declared view, with the checksum of its query: a changed query is a new migration.
CREATE TABLE ledger_declared_views (
    ledger    text NOT NULL,
    view_name text NOT NULL,
    sql_name  text NOT NULL UNIQUE,
    checksum  text NOT NULL,
    version   integer NOT NULL,
    PRIMARY KEY (ledger, view_name),
    FOREIGN KEY (ledger, version) REFERENCES ledger_declared_migrations
);

-- Each declared invariant (ledger_engine.core.invariants): the audits evaluate it from this row
-- with SQL of their own, so that rules are data and never formatted into SQL. `sources` is a
-- JSON array of {"stream": ..., "field": ...} (field null for a balanced rule).
CREATE TABLE ledger_declared_invariants (
    ledger     text NOT NULL,
    name       text NOT NULL,
    sql_name   text NOT NULL UNIQUE,
    kind       text NOT NULL CHECK (kind IN ('minimum', 'conserved', 'balanced')),
    table_name text NOT NULL,
    minimum    numeric,
    sources    jsonb NOT NULL,
    checksum   text NOT NULL,
    version    integer NOT NULL,
    PRIMARY KEY (ledger, name),
    FOREIGN KEY (ledger, version) REFERENCES ledger_declared_migrations
);
