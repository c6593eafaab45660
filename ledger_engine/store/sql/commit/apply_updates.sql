-- The table's rows the batch changed, each only if it still holds what the batch read.
-- {table} is the declared table; {value}, {key} and {holds_before} are the fixed fragments of
-- its value and key types (`ledger_engine.store.commit`).
UPDATE {table} t SET value = {value} FROM ledger_net n WHERE n.table_name = %s
AND n.before IS NOT NULL AND n.after IS NOT NULL AND t.key = {key} AND {holds_before};
