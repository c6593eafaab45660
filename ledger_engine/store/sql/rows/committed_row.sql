-- One row of a declared table as committed, with the batch that last changed it, through the
-- view of every declared table's rows (the ledger's generated `ledger_rows`).
SELECT value, last_batch_id FROM ledger_rows
WHERE table_name = %(table)s AND key = %(key)s;
