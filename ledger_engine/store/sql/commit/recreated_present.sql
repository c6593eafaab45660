-- Whether a row the batch created and deleted again is present: it must be absent.
SELECT EXISTS (
    SELECT 1 FROM ledger_net n JOIN {table} t ON t.key = {key}
    WHERE n.table_name = %s AND n.before IS NULL AND n.after IS NULL
);
