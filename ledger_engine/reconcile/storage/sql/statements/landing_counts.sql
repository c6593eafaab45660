-- How many files of a source were loaded, rejected whole (nothing in them could be read: no
-- entry, a rejection) or landed again as a duplicate, and the entries loaded and rejected.
SELECT
    count(*) FILTER (WHERE l.outcome = 'loaded' AND NOT (f.entries = 0 AND f.rejected > 0)),
    count(*) FILTER (WHERE l.outcome = 'loaded' AND f.entries = 0 AND f.rejected > 0),
    count(*) FILTER (WHERE l.outcome = 'duplicate'),
    coalesce(sum(f.entries) FILTER (WHERE l.outcome = 'loaded'), 0),
    coalesce(sum(f.rejected) FILTER (WHERE l.outcome = 'loaded'), 0)
FROM ledger_statement_landings AS l
JOIN ledger_statement_files AS f USING (file_id)
WHERE l.source = %(source)s;
