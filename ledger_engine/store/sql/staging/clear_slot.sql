-- Whatever a task's slot staged before (an earlier attempt of the same task), cleared as
-- its transaction starts.
DELETE FROM ledger_stage_rows WHERE batch_id = %s AND slot = %s;
