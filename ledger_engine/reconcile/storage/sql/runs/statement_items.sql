-- The statement entries a run of the source considers: those of files loaded since its last
-- run, and those still in its open breaks (every earlier entry is matched or in one).
SELECT e.file_id, e.position, e.account, e.amount, coalesce(e.value_date, e.booking_date),
       e.reference, e.description
FROM ledger_statement_entries AS e
WHERE e.source = %(source)s AND e.file_id > %(after_file)s AND e.file_id <= %(through_file)s
UNION
SELECT e.file_id, e.position, e.account, e.amount, coalesce(e.value_date, e.booking_date),
       e.reference, e.description
FROM ledger_recon_breaks AS b
JOIN ledger_statement_entries AS e USING (file_id, position)
WHERE b.source = %(source)s AND b.status = 'open'
ORDER BY 1, 2;
