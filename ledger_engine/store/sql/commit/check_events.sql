-- The batch's events and their positions: every line of the batch must be one event, at
-- positions 0..n-1.
SELECT count(*), count(DISTINCT position), min(position), max(position)
FROM ledger_events WHERE batch_id = %s;
