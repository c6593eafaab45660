-- Whether the declared table {table} holds a row.
SELECT EXISTS (SELECT 1 FROM {table});
