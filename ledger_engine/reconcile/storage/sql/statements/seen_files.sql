-- The files of a source already landed, as (name, size, modification time): passed over
-- without being read again.
SELECT file_name, size_bytes, modified_ns FROM ledger_statement_landings WHERE source = %s;
