-- The accounts a source no longer reconciles: those of another table than its declared one,
-- and, where it declares its rows, those it no longer declares (declared again later, such an
-- account appears anew, and its movements are read from the start again).
DELETE FROM ledger_recon_accounts
WHERE source = %(source)s
  AND (table_name <> %(table)s
       OR (%(declared)s::text[] IS NOT NULL AND account <> ALL (%(declared)s::text[])));
