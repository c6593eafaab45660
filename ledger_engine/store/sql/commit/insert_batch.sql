-- The batch row: what the batch recorded, its roots and the hash chaining it to the batch
-- before (`commit.HASHED_FIELDS`), and how long it took.
INSERT INTO ledger_batches (
    batch_id, ledger, input_fingerprint, input_files, events_ingested, applied, rejected,
    duplicates, changes, results, merkle_roots, prev_hash, batch_hash, execute_seconds,
    commit_seconds
) VALUES (
    %(batch_id)s, %(ledger)s, %(input_fingerprint)s, CAST(%(input_files)s AS jsonb),
    %(events_ingested)s, %(applied)s, %(rejected)s, %(duplicates)s, %(changes)s, %(results)s,
    CAST(%(merkle_roots)s AS jsonb), %(prev_hash)s, %(batch_hash)s, %(execute_seconds)s,
    %(commit_seconds)s
);
