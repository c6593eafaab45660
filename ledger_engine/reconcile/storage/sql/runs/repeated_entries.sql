-- Of the statement entries a run considers, those that repeat an earlier entry of the source
-- which it does not consider (a settled one: matched by a rule, by hand or by a write-off):
-- identical in account, amount, date, reference and description. Left unmatched, such an entry
-- is a duplicate (the specification's first break), which the matcher cannot tell, not seeing
-- the earlier entry. Each entry is looked up by the index of identities
-- (`ledger_statement_entries_identity`): what is considered, not the statements' history.
SELECT e.file_id, e.position
FROM unnest(%(files)s::bigint[], %(positions)s::integer[]) AS i(file_id, position)
JOIN ledger_statement_entries AS e USING (file_id, position)
WHERE EXISTS (
    SELECT 1
    FROM ledger_statement_entries AS p
    WHERE (p.source, p.table_name, p.account, p.amount)
              = (e.source, e.table_name, e.account, e.amount)
      AND coalesce(p.value_date, p.booking_date) = coalesce(e.value_date, e.booking_date)
      AND p.reference IS NOT DISTINCT FROM e.reference
      AND p.description IS NOT DISTINCT FROM e.description
      AND (p.file_id, p.position) < (e.file_id, e.position)
      AND p.file_id <= %(after_file)s
      AND NOT EXISTS (
          SELECT 1
          FROM ledger_recon_breaks AS b
          WHERE b.status = 'open' AND (b.file_id, b.position) = (p.file_id, p.position)))
ORDER BY 1, 2;
