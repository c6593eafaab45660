-- A declared table that was never written, dropped to be created with its new types.
-- Recorded as run in the generated migration.
DROP TABLE {table};
