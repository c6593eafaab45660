-- The table's rows the batch created, each only if it is still absent, each naming the
-- batch's last change of it.
INSERT INTO {table} (key, value, last_change_batch, last_change_position, last_change_seq)
SELECT {key}, {value}, %(batch_id)s, n.last_position, n.last_seq FROM ledger_net n
WHERE n.table_name = %(table_name)s AND n.before IS NULL AND n.after IS NOT NULL
ON CONFLICT (key) DO NOTHING;
