-- The first keys of a declared table, in key order (the demo's sample of accounts).
SELECT key FROM ledger_rows WHERE table_name = %s ORDER BY key LIMIT %s;
