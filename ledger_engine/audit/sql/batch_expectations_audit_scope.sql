-- The batch suite's query asset `audit_scope`: the one row of the view ledger_audit_scope, the
-- first batch after the last passing audit's mark and the newest batch.
SELECT first_batch, last_batch FROM ledger_audit_scope
