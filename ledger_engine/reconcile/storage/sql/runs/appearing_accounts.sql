-- The accounts whose movements a run of the source reads from the source's start: those it
-- reconciles that no run has read so far (named by an entry of a file loaded since its last
-- run, for a source that names its rows by the ledger's keys; declared, for one that declares
-- them), or every one of them when `restart` (the source's start changed, or its last run
-- recorded none). New entries are found by file (the primary key), known accounts by their
-- key: what is new, not the history.
WITH reconciled AS (
    SELECT DISTINCT e.account
    FROM ledger_statement_entries AS e
    WHERE %(declared)s::text[] IS NULL
      AND e.file_id > %(after_file)s AND e.file_id <= %(through_file)s
      AND e.source = %(source)s AND e.table_name = %(table)s
    UNION
    SELECT unnest(%(declared)s::text[])
)
SELECT r.account
FROM reconciled AS r
WHERE %(restart)s
   OR NOT EXISTS (
       SELECT 1
       FROM ledger_recon_accounts AS a
       WHERE (a.source, a.table_name, a.account) = (%(source)s, %(table)s, r.account))
ORDER BY r.account;
