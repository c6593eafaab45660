-- The audit report's reconciliation page: each account of the sources `:sources` with the
-- last balance a statement stated for it (dated as the statement dates it, `stated`, and the
-- moment it holds at, `as_of`), the ledger's balance as of that moment and the
-- drift between them, from the readers' view `statement_drift`. The accounts that drift come
-- first, the largest drift first; at most `:limit` rows, each counting all the accounts and
-- those that drift (the counts are over every account, the limit applies after them).
SELECT d.source, d.table_name, d.account, d.statement_balance, d.stated, d.as_of,
       d.ledger_balance_then, d.drift, d.ledger_balance_now,
       count(*) OVER () AS accounts,
       count(*) FILTER (WHERE d.drift <> 0) OVER () AS drifting
FROM statement_drift AS d
WHERE d.source = ANY(:sources)
ORDER BY d.drift = 0, abs(d.drift) DESC, d.source, d.table_name, d.account
LIMIT :limit
