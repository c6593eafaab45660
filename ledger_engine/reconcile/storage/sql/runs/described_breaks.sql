-- The breaks of the given ids, each with what a person needs to recognise it, by id: the
-- amount of its statement entry and of its ledger change (each NULL where it has none; a
-- ledger change's amount as the view open_breaks gives it) and the difference between them.
SELECT b.break_id, b.source, b.reason, b.account,
       e.amount AS statement_amount,
       CASE WHEN c.batch_id IS NOT NULL THEN
           COALESCE((c.after #>> '{}')::bigint, 0) - COALESCE((c.before #>> '{}')::bigint, 0)
       END AS ledger_amount,
       b.amount_difference, b.resolution
FROM ledger_recon_breaks AS b
LEFT JOIN ledger_statement_entries AS e USING (file_id, position)
LEFT JOIN ledger_change_log AS c
    ON (c.batch_id, c.position, c.seq) = (b.batch_id, b.change_position, b.change_seq)
WHERE b.break_id = ANY(%s)
ORDER BY b.break_id;
