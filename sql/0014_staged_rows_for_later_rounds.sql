-- A batch's row writes are staged once, in ledger_stage_change_log: the commit finds each
-- row's net change there (its first change's `before`, its last change's `after`), and checks
-- there that each of a row's changes starts from the one before it and that one task of a
-- round wrote it. ledger_stage_rows (0004) now holds only what a later round of the same batch
-- reads: the net change of each row an earlier round wrote, nothing for a batch of one round
-- and nothing from the settling of deferred adds (whose changes are in the change log).
COMMENT ON TABLE ledger_stage_rows IS
    'Net change of each row a round of a multi-round batch wrote, read by its later rounds';
