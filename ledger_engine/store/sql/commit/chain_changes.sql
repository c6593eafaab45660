-- The batch's changes, each beside the row's change before it, its first and whether it is
-- its last: one sort of the change log by row and position serves the chain check and the
-- net changes. Any order groups a row's changes: bytewise ("C") sorts the 4x10^5 changes of
-- 10^5 transfers in 0.45 s, the database's collation in 0.83 s.
CREATE TEMPORARY TABLE ledger_chain ON COMMIT DROP AS
SELECT table_name, key, position, seq, before, after,
    lag(position) OVER w IS NULL AS is_first, lag(after) OVER w AS previous_after,
    first_value(before) OVER w AS first_before, first_value(position) OVER w AS first_position,
    first_value(seq) OVER w AS first_seq, lead(position) OVER w IS NULL AS last
FROM ledger_change_log WHERE batch_id = %s
WINDOW w AS (PARTITION BY key COLLATE "C", table_name COLLATE "C" ORDER BY position, seq);
