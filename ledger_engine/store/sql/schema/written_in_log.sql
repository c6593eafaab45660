-- Whether the change log holds a change of the declared table.
SELECT EXISTS (SELECT 1 FROM ledger_change_log WHERE table_name = %s);
