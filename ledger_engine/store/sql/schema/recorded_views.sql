-- The ledger's declared views as recorded, each with the checksum of its query.
SELECT view_name, checksum FROM ledger_declared_views WHERE ledger = %s;
