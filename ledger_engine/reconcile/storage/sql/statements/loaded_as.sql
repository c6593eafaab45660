-- The name of the file of a source first loaded with this content, if any.
SELECT file_name FROM ledger_statement_files WHERE source = %s AND sha256 = %s;
