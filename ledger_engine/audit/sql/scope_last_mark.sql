-- The audit mark reaching furthest (the latest of those, if several do); no row if no audit
-- passed yet. Not a scope's relations (those are scope_ledger.sql and scope_batches.sql): a
-- statement of `audit/scope.py`.
SELECT mark_id, kind, first_batch, audited_through, batch_hash, checks, audited_at
FROM ledger_audit_marks
ORDER BY audited_through DESC, mark_id DESC
LIMIT 1
