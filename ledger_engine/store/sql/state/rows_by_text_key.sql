-- Every row of the declared table {table}, its text keys in code-point order (what Merkle
-- roots hash), whatever the database's collation.
SELECT key, value FROM {table} ORDER BY key COLLATE "C";
