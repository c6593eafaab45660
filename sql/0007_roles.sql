-- Access control: three group roles (NOLOGIN); people and services log in as users that are
-- members of one of them (`ledger db create-login NAME --role ...`, ledger_engine.store.roles).
--
--   ledger_writer   the engine: exactly the statements of ledger_engine/store and spark/postgres
--   ledger_reader   the view request_outcomes and the views an application declares; nothing else
--   ledger_auditor  SELECT on every table and view; writes nothing
--
-- Roles belong to the whole server while this file runs once per database, and many databases
-- may be migrated at once (the migration's advisory lock is per database). A role another
-- migration created and committed is skipped; one it created but has not committed yet makes
-- CREATE ROLE wait for that transaction and then fail with unique_violation, caught here. A
-- migrating user without CREATEROLE works once an administrator has created the three roles.
DO $roles$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['ledger_writer', 'ledger_reader', 'ledger_auditor'] LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = role_name) THEN
            BEGIN
                EXECUTE 'CREATE ROLE ' || quote_ident(role_name) || ' NOLOGIN';
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile by the migration of another database
            END;
        END IF;
    END LOOP;
END
$roles$;

-- What every user has by default and a read-only user must not: temporary tables in this
-- database, and (PostgreSQL 14 and older) CREATE in the public schema. CONNECT and the schema's
-- USAGE are granted to the three roles explicitly, so that they keep them if an administrator
-- also revokes PUBLIC's.
DO $database$
DECLARE
    this_database text := quote_ident(current_database());
    this_schema text := quote_ident(current_schema());
BEGIN
    EXECUTE 'REVOKE TEMPORARY ON DATABASE ' || this_database || ' FROM PUBLIC';
    EXECUTE 'GRANT CONNECT ON DATABASE ' || this_database
        || ' TO ledger_writer, ledger_reader, ledger_auditor';
    -- The commit builds its net row changes in a temporary table (ledger_net).
    EXECUTE 'GRANT TEMPORARY ON DATABASE ' || this_database || ' TO ledger_writer';
    EXECUTE 'REVOKE CREATE ON SCHEMA ' || this_schema || ' FROM PUBLIC';
    EXECUTE 'GRANT USAGE ON SCHEMA ' || this_schema
        || ' TO ledger_writer, ledger_reader, ledger_auditor';
    -- The auditor reads everything there is, the migration history and the staging included.
    EXECUTE 'GRANT SELECT ON ALL TABLES IN SCHEMA ' || this_schema || ' TO ledger_auditor';
    EXECUTE 'GRANT SELECT ON ALL SEQUENCES IN SCHEMA ' || this_schema || ' TO ledger_auditor';
END
$database$;

-- The writer. The log is append-only for it: a commit inserts events, changes, results,
-- rejections, duplicates, executed request ids and the batch row, and never updates or deletes
-- them. State tables take upserts and deletes, and LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE
-- (which needs UPDATE or DELETE); the Merkle bucket digests are deleted and re-inserted.
GRANT SELECT, INSERT ON ledger_batches, ledger_events, ledger_change_log, ledger_results,
    ledger_rejections, ledger_duplicates, ledger_requests TO ledger_writer;
GRANT SELECT, INSERT, DELETE ON ledger_merkle_buckets TO ledger_writer;
-- Reading adds nothing the writer cannot already read underneath, and `ledger balance` uses it.
GRANT SELECT ON request_outcomes TO ledger_writer;
-- So that a migration run finding nothing to apply can tell so.
GRANT SELECT ON ledger_schema_migrations TO ledger_writer;

-- The writer owns the staging tables: the commit runs ANALYZE on them (without fresh
-- statistics the planner takes a just-filled staging table for empty and the commit's checks
-- take minutes), and before PostgreSQL 17 (its MAINTAIN privilege) only a table's owner may
-- ANALYZE it; anyone else gets a warning and stale statistics. Ownership also covers the
-- staging's COPY, DELETE and TRUNCATE. A later staging table must be handed over the same way.
ALTER TABLE ledger_stage_events OWNER TO ledger_writer;
ALTER TABLE ledger_stage_change_log OWNER TO ledger_writer;
ALTER TABLE ledger_stage_results OWNER TO ledger_writer;
ALTER TABLE ledger_stage_rejections OWNER TO ledger_writer;
ALTER TABLE ledger_stage_duplicates OWNER TO ledger_writer;
ALTER TABLE ledger_stage_requests OWNER TO ledger_writer;
ALTER TABLE ledger_stage_rows OWNER TO ledger_writer;

-- The reader: the views and nothing else. A view reads its tables with its owner's
-- rights, so the reader needs no right on them. A later migration that drops and re-creates
-- one of these views must grant it again (CREATE OR REPLACE VIEW keeps the grants).
GRANT SELECT ON request_outcomes TO ledger_reader;

-- Tables, views and sequences that later migrations create (run by the same migrating user)
-- get the writer's DML and the auditor's SELECT by themselves: a new application's state
-- table, a new log table. The reader gets nothing by default: a new view for it is granted
-- by name. Functions keep PostgreSQL's default (EXECUTE for PUBLIC): views may call them, and
-- a view's user needs EXECUTE on what it calls.
ALTER DEFAULT PRIVILEGES GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ledger_writer;
ALTER DEFAULT PRIVILEGES GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO ledger_writer;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO ledger_auditor;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON SEQUENCES TO ledger_auditor;
