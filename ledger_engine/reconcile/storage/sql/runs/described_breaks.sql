-- The breaks of the given ids, each with what a person needs to recognise it, by id.
SELECT break_id, source, reason, account, amount_difference, resolution
FROM ledger_recon_breaks
WHERE break_id = ANY(%s)
ORDER BY break_id;
