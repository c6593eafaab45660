-- The identity of a ledger's schema in this database: a random id written once, when the
-- schema is migrated (ledger_engine.store.identity). The pipeline keeps one streaming
-- checkpoint per (database id, schema) (ledger_engine.pipeline.checkpoint), so that pointing
-- LEDGER_DATABASE_URL at another database never drives this ledger's checkpoint there. Neither
-- a database's name (reused after a DROP) nor PostgreSQL's system identifier (shared by every
-- database of a cluster) tells two databases apart; a new database, or a schema dropped and
-- migrated again, gets a new id. A copy (CREATE DATABASE ... TEMPLATE, a dump restored) keeps
-- it: the checkpoint's batches are then checked against the copy's (the pipeline refuses a
-- database behind or ahead of its checkpoint).
--
-- Grants: the auditor's SELECT from the default privileges of 0007_roles.sql; the writer may
-- read the id and never change it.
CREATE TABLE ledger_identity (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id         uuid NOT NULL DEFAULT gen_random_uuid(),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
INSERT INTO ledger_identity DEFAULT VALUES;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ledger_identity FROM ledger_writer;
GRANT SELECT ON ledger_identity TO ledger_writer;
