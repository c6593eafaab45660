-- What the database holds of one file, counted independently of what the loader meant to
-- write: the loader checks the two agree before it commits.
SELECT
    (SELECT count(*) FROM ledger_statement_entries WHERE file_id = %(file_id)s),
    (SELECT count(*) FROM ledger_statement_rejections WHERE file_id = %(file_id)s);
