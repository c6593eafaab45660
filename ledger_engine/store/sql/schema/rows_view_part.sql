-- One declared table's rows in ledger_rows: {name} is its declared name, quoted as a literal
-- by psycopg2 (DDL takes no parameters), {table} its PostgreSQL table; each row names the
-- batch of its last change (sql/0025_change_links.sql).
SELECT CAST({name} AS text) AS table_name, CAST(t.key AS text) AS key, to_jsonb(t.value) AS value, t.last_change_batch AS last_batch_id FROM {table} AS t;
