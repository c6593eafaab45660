-- Statement files as banks send them (ledger_engine.reconcile.storage.statements).
--
-- One file may hold several statements of one account: a month of daily statements, each with
-- its own opening and closing balance. A balance was keyed by (file_id, account), so the
-- second statement's balance collided with the first's and the whole file could not be kept.
-- A balance is now keyed by its statement within the file (`statement`: 1, 2, ... in the
-- file's order; a format without statements, CSV, states its balances as statement 1).
ALTER TABLE ledger_statement_balances
    ADD COLUMN statement integer NOT NULL DEFAULT 1 CHECK (statement >= 1);
ALTER TABLE ledger_statement_balances ALTER COLUMN statement DROP DEFAULT;
ALTER TABLE ledger_statement_balances
    DROP CONSTRAINT ledger_statement_balances_pkey,
    ADD CONSTRAINT ledger_statement_balances_pkey PRIMARY KEY (file_id, statement, account);

-- The last stated balance of each account: of two statements of one file closing at the same
-- moment, the later in the file.
CREATE OR REPLACE VIEW statement_drift AS
SELECT s.source,
       s.table_name,
       s.account,
       s.closing AS statement_balance,
       s.as_of,
       ledger_balance_at(s.table_name, s.account, s.as_of) AS ledger_balance_then,
       s.closing - ledger_balance_at(s.table_name, s.account, s.as_of) AS drift,
       ledger_balance_at(s.table_name, s.account, 'infinity') AS ledger_balance_now
FROM (
    SELECT DISTINCT ON (source, table_name, account) source, table_name, account, closing, as_of
    FROM ledger_statement_balances
    ORDER BY source, table_name, account, as_of DESC, file_id DESC, statement DESC
) AS s;

-- A file the parser read but the store could not take (a value PostgreSQL refuses, say) is
-- kept as one rejection of the whole file, reason `unloadable`, with the store's reason and
-- the file's bytes: later runs pass over it, a person sees why, and no file stops a run.
ALTER TABLE ledger_statement_rejections
    DROP CONSTRAINT ledger_statement_rejections_check,
    ADD CONSTRAINT ledger_statement_rejections_check
        CHECK ((position = 0) = (reason IN ('malformed_file', 'unloadable')));
