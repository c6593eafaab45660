-- One table's net changes all applied.
RELEASE SAVEPOINT ledger_apply;
