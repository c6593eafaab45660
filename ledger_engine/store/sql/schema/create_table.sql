-- A declared table: {key_type} and {value_type} are the PostgreSQL types of the declared key
-- and value (`schema.KEY_TYPES`, `schema.VALUE_TYPES`). State tables are updated in place, a
-- batch's net changes at a time: room left on every page (fillfactor) lets PostgreSQL keep an
-- updated row on its page (a HOT update) without touching the key index. Recorded as run in
-- the generated migration.
CREATE TABLE {table} (key {key_type} PRIMARY KEY, value {value_type} NOT NULL) WITH (fillfactor = 85);
