-- Each journal row is written once: Spark tasks hand their part of a batch's journal to the
-- driver as CSV, and the batch's commit COPYs it straight into the ledger tables inside its
-- one transaction (ledger_engine.store.staging, ledger_engine.store.commit). The staging
-- tables that held a batch's journal until the commit moved it are gone; ledger_stage_rows
-- stays, for what a later round of a batch reads of the rows an earlier round wrote.
DROP TABLE ledger_stage_events;
DROP TABLE ledger_stage_change_log;
DROP TABLE ledger_stage_results;
DROP TABLE ledger_stage_rejections;
DROP TABLE ledger_stage_duplicates;
DROP TABLE ledger_stage_requests;
