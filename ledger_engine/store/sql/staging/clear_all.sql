-- Every staged row (once a batch is committed, none is needed any more).
TRUNCATE ledger_stage_rows;
