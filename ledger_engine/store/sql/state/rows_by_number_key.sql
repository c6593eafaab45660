-- Every row of the declared table {table}, by key.
SELECT key, value FROM {table} ORDER BY key;
