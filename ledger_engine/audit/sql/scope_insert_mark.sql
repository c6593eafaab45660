-- Records a passing audit's mark from the bound values and returns the mark as stored (with
-- its id and time). Not a scope's relations (those are scope_ledger.sql and
-- scope_batches.sql): a statement of `audit/scope.py`.
INSERT INTO ledger_audit_marks (kind, first_batch, audited_through, batch_hash, checks)
VALUES (:kind, :first_batch, :audited_through, :batch_hash, :checks)
RETURNING mark_id, kind, first_batch, audited_through, batch_hash, checks, audited_at
