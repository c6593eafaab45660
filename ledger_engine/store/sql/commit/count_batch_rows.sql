-- The batch's rows in the journal table {journal}.
SELECT count(*) FROM {journal} WHERE batch_id = %s;
