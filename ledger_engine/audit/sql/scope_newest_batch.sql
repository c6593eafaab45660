-- The newest batch row's id and batch_hash; no row if no batch was committed. Not a scope's
-- relations (those are scope_ledger.sql and scope_batches.sql): a statement of
-- `audit/scope.py`.
SELECT batch_id, batch_hash FROM ledger_batches ORDER BY batch_id DESC LIMIT 1
