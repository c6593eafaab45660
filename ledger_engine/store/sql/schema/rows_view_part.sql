-- One declared table's rows in ledger_rows: {name} is its declared name, quoted as a literal
-- by psycopg2 (DDL takes no parameters), {table} its PostgreSQL table.
SELECT CAST({name} AS text) AS table_name, CAST(t.key AS text) AS key, to_jsonb(t.value) AS value FROM {table} AS t;
