-- A declared table: {key_type} and {value_type} are the PostgreSQL types of the declared key
-- and value (`schema.KEY_TYPES`, `schema.VALUE_TYPES`). State tables are updated in place, a
-- batch's net changes at a time: room left on every page (fillfactor) lets PostgreSQL keep an
-- updated row on its page (a HOT update) without touching the key index. Recorded as run in
-- the generated migration. Each row names its last change (the change log's primary key), which
-- the commit links the row's next change to (sql/0025_change_links.sql).
CREATE TABLE {table} (
    key {key_type} PRIMARY KEY,
    value {value_type} NOT NULL,
    last_change_batch bigint,
    last_change_position integer,
    last_change_seq integer
) WITH (fillfactor = 85);
