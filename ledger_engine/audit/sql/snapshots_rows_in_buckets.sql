-- The rows (key, value as jsonb) of a declared table whose keys fall in the buckets of the
-- array `%s` (bound by psycopg2). Composed by psycopg2 (`snapshots.composable`): {table} is the
-- table's sql_name as an Identifier, {key_json} the fixed expression of its key's canonical
-- JSON for its declared key type.
SELECT key, to_jsonb(value) FROM {table} WHERE ledger_merkle_bucket({key_json}) = ANY(%s)
