-- A ledger's own schema, the first time it is migrated.
CREATE SCHEMA {schema};
