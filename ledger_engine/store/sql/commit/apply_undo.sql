-- One table's net changes undone, so that the refusal can name the rows that changed.
ROLLBACK TO SAVEPOINT ledger_apply;
