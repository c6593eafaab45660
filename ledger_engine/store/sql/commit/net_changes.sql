-- Each written row's net change over the batch: its first change's before, its last one's
-- after.
CREATE TEMPORARY TABLE ledger_net ON COMMIT DROP AS
SELECT table_name, key, first_before AS before, after FROM ledger_chain WHERE last;
