-- The net changes of one table by kind (updates, deletes, inserts): the apply statements must
-- touch exactly that many rows of each kind (apply_existing.sql, apply_inserts.sql).
SELECT count(*) FILTER (WHERE before IS NOT NULL AND after IS NOT NULL),
    count(*) FILTER (WHERE before IS NOT NULL AND after IS NULL),
    count(*) FILTER (WHERE before IS NULL AND after IS NOT NULL)
FROM ledger_net WHERE table_name = %s;
