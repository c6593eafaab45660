-- The table's rows the batch changed, each only if it still holds what the batch read, and
-- each then naming the batch's last change of it. {table} is the declared table; {value},
-- {key} and {holds_before} are the fixed fragments of its value and key types
-- (`ledger_engine.store.commit`).
UPDATE {table} t SET value = {value}, last_change_batch = %(batch_id)s,
    last_change_position = n.last_position, last_change_seq = n.last_seq
FROM ledger_net n WHERE n.table_name = %(table_name)s
AND n.before IS NOT NULL AND n.after IS NOT NULL AND t.key = {key} AND {holds_before};
