-- The ledger's declared invariants as recorded, each with the checksum of its rule.
SELECT name, checksum FROM ledger_declared_invariants WHERE ledger = %s;
