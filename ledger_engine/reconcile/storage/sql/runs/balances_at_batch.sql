-- Each key's balance as of a batch (0 before its first change), for a statement's opening.
SELECT key, ledger_balance_at_batch(%(table)s, key, %(batch)s)
FROM unnest(%(keys)s::text[]) AS k(key);
