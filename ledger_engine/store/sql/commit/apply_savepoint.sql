-- Before one table's net changes: undone if any of them finds its row changed.
SAVEPOINT ledger_apply;
