-- The table's rows the batch created, each only if it is still absent.
INSERT INTO {table} (key, value) SELECT {key}, {value} FROM ledger_net n
WHERE n.table_name = %s AND n.before IS NULL AND n.after IS NOT NULL
ON CONFLICT (key) DO NOTHING;
