-- The table's rows the batch deleted, each only if it still holds what the batch read.
DELETE FROM {table} t USING ledger_net n WHERE n.table_name = %s
AND n.before IS NOT NULL AND n.after IS NULL AND t.key = {key} AND {holds_before};
