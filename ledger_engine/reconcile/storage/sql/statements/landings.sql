-- The files landed for a source, newest first (at most %(limit)s): each as it landed, with the
-- file first loaded with its content (itself, or the one a duplicate repeats) and its counts.
SELECT l.file_name, l.outcome, f.file_name, f.entries, f.rejected, l.landed_at
FROM ledger_statement_landings AS l
JOIN ledger_statement_files AS f USING (file_id)
WHERE l.source = %(source)s
ORDER BY l.landed_at DESC, l.file_name
LIMIT %(limit)s;
