-- The open breaks as readers see them (the view open_breaks), oldest first.
SELECT break_id, source, reason, account, statement_amount, ledger_amount, amount_difference,
       statement_reference, request_id, opened_at, write_off_request_id
FROM open_breaks
ORDER BY opened_at, break_id;
