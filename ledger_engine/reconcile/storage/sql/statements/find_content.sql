-- The file of a source with this content, if it was loaded before.
SELECT file_id FROM ledger_statement_files WHERE source = %s AND sha256 = %s;
