INSERT INTO ledger_statement_files
    (source, file_name, sha256, format, statement_id, entries, rejected, sources_digest)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
RETURNING file_id;
