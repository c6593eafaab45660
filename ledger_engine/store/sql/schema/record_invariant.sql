-- A declared invariant's rule, for the audits to evaluate (new, or changed).
INSERT INTO ledger_declared_invariants
    (ledger, name, sql_name, kind, table_name, minimum, sources, checksum, version)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (ledger, name) DO UPDATE SET kind = EXCLUDED.kind,
    table_name = EXCLUDED.table_name, minimum = EXCLUDED.minimum,
    sources = EXCLUDED.sources, checksum = EXCLUDED.checksum, version = EXCLUDED.version;
