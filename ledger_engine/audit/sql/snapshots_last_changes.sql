-- Each key's last change in the change log of one table: its key (as the log keeps it, text),
-- the key's canonical JSON and the change's `after` (NULL: the key was deleted). Composed by
-- psycopg2 (`snapshots.composable`): {table_name} is the table's name as a Literal, {key_json}
-- the fixed expression of a change-log key's canonical JSON for the table's key type.
SELECT DISTINCT ON (key) key, {key_json} AS key_json, after
FROM ledger_change_log WHERE table_name = {table_name}
ORDER BY key, batch_id DESC, position DESC, seq DESC
