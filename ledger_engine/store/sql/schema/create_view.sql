-- A declared view: {query} is the application's declared query (its own .sql file).
-- Recorded as run in the generated migration.
CREATE VIEW {view} AS
{query};
