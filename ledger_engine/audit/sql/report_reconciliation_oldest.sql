-- The audit report's reconciliation page: the oldest open breaks of the sources `:sources`
-- (at most `:limit`), oldest first, from the readers' view `open_breaks`, with the age at the
-- reading transaction's start and the write-off posted for it, if any (not yet settled).
SELECT o.break_id, o.source, o.reason, o.account, o.statement_amount, o.ledger_amount,
       o.amount_difference, o.booking_date, o.statement_reference, o.statement_description,
       o.request_id, o.opened_at, now() - o.opened_at AS age, o.write_off_request_id
FROM open_breaks AS o
WHERE o.source = ANY(:sources)
ORDER BY o.opened_at, o.break_id
LIMIT :limit
