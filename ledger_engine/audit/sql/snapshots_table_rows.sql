-- Every row of a declared table as (key_json, value_json), the canonical JSON of its key and
-- value: the rows `snapshots.table_digests` sums into bucket digests. Composed by psycopg2
-- (`snapshots.composable`): {table} is the table's sql_name as an Identifier, {key_json} and
-- {value_json} the fixed expressions for its declared key and value types.
SELECT {key_json}, {value_json} FROM {table}
