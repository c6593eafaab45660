-- A few of the table's rows that no longer hold what the batch read: what a refusal names.
SELECT n.key, to_jsonb(t.value), n.before FROM ledger_net n
LEFT JOIN {table} t ON t.key = {key}
WHERE n.table_name = %s AND to_jsonb(t.value) IS DISTINCT FROM n.before LIMIT 3;
