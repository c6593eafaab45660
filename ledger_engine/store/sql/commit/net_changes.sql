-- Each written row's net change over the batch: its first change's before, its last one's
-- after, and where both changes are (the first is linked to the row's change before the
-- batch, the last is the one the row names: apply_*.sql).
CREATE TEMPORARY TABLE ledger_net ON COMMIT DROP AS
SELECT table_name, key, first_before AS before, after, first_position, first_seq,
    position AS last_position, seq AS last_seq
FROM ledger_chain WHERE last;
