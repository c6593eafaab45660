-- The staged rows of one batch (a replayed batch, already committed).
DELETE FROM ledger_stage_rows WHERE batch_id = %s;
