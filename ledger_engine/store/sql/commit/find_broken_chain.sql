-- A change that does not start from its row's change before it, if there is one.
SELECT table_name, key, position FROM ledger_chain
WHERE NOT is_first AND before IS DISTINCT FROM previous_after LIMIT 1;
