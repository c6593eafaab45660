-- Which ledger movements a run of a source considers (the scope in the specification of
-- ledger_engine/reconcile/matching): every movement of each account the source reconciles, at or
-- after the source's declared start, until it is matched or in a break, whenever the account
-- first appears. Before this migration a run read only the batches committed since the
-- source's last run, so an account that first appeared after a run (a statement landing after
-- the daily run on an empty inbox, an account added to a declaration) never had its earlier
-- movements considered.

-- The start a run read movements from (the declaration's `from`: a batch, a date, or neither,
-- which is batch 0). NULL from_batch: a run recorded before this migration, whose start nobody
-- recorded; the next run of its source reads every account it reconciles again from its
-- start, which also brings in the movements that the earlier scope never read.
ALTER TABLE ledger_recon_runs
    ADD COLUMN from_batch bigint CHECK (from_batch >= 0),
    ADD COLUMN from_date date,
    ADD CONSTRAINT ledger_recon_runs_start CHECK (from_batch IS NOT NULL OR from_date IS NULL);

-- The accounts each source reconciles, and the run that first read each one's movements from
-- the source's start (read again, and this run updated, when the start changes). A source that
-- names its rows by the ledger's keys gains an account with the first statement entry naming
-- it; one that declares its rows holds exactly those it declared at its last run. A later run
-- reads the movements of these accounts in the batches committed since the run before it
-- (`ledger_change_log_row` by key, or the change log's key by batch): what is new, not the
-- history. Empty after this migration: the next run of each source fills it.
CREATE TABLE ledger_recon_accounts (
    source     text NOT NULL,
    table_name text NOT NULL,
    account    text NOT NULL,
    run_id     bigint NOT NULL REFERENCES ledger_recon_runs,
    PRIMARY KEY (source, table_name, account)
);
REVOKE UPDATE ON ledger_recon_accounts FROM ledger_writer;
GRANT UPDATE (run_id) ON ledger_recon_accounts TO ledger_writer;

-- An entry's identity (account, amount, date, reference, description), looked up for each entry
-- a run considers: one that repeats an earlier entry the source already settled is a
-- duplicate, whichever run the earlier one was settled by.
CREATE INDEX ledger_statement_entries_identity
    ON ledger_statement_entries (source, table_name, account, amount);
