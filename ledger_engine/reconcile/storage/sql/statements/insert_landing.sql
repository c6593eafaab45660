-- The same name and content landed again (touched, or copied over itself) is the same file:
-- only its size and modification time are brought up to date.
INSERT INTO ledger_statement_landings
    (source, file_name, sha256, size_bytes, modified_ns, file_id, outcome)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (source, file_name, sha256) DO UPDATE
    SET size_bytes = EXCLUDED.size_bytes, modified_ns = EXCLUDED.modified_ns
RETURNING outcome, (xmax = 0) AS inserted;
