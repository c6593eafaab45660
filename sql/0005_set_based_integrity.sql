-- The log tables' foreign keys were checked by a trigger per inserted row at the end of each
-- batch's commit: for a batch of a million transfers, six million queued trigger events, most
-- of the commit's time. The commit now checks the same relations set-based on the staged batch
-- before moving it into the ledger (ledger_engine.store.commit: every change, result,
-- rejection, duplicate and executed request id belongs to a staged event of the right
-- outcome, every rejected and duplicate event has its row), and the audits check them over
-- the whole ledger. Primary keys and the uniqueness of executed request ids stay.

ALTER TABLE ledger_events DROP CONSTRAINT ledger_events_batch_id_fkey;
ALTER TABLE ledger_change_log
    DROP CONSTRAINT ledger_change_log_batch_id_fkey,
    DROP CONSTRAINT ledger_change_log_batch_id_position_fkey;
ALTER TABLE ledger_results
    DROP CONSTRAINT ledger_results_batch_id_fkey,
    DROP CONSTRAINT ledger_results_batch_id_position_fkey;
ALTER TABLE ledger_rejections
    DROP CONSTRAINT ledger_rejections_batch_id_fkey,
    DROP CONSTRAINT ledger_rejections_batch_id_position_fkey;
ALTER TABLE ledger_duplicates
    DROP CONSTRAINT ledger_duplicates_batch_id_fkey,
    DROP CONSTRAINT ledger_duplicates_batch_id_position_fkey;
ALTER TABLE ledger_requests DROP CONSTRAINT ledger_requests_batch_id_position_fkey;
