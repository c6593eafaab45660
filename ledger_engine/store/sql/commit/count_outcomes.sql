-- The batch's events by outcome.
SELECT outcome, count(*) FROM ledger_events WHERE batch_id = %s GROUP BY outcome;
