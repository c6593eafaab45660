-- A statement's closing balance dated as the bank dated it (ledger_engine.reconcile.entries):
-- `stated` is the day ('2026-12-07') or the date-time with its offset
-- ('2026-12-07T17:00:00+01:00'), as ISO 8601 text. `as_of` stays the moment the balance holds
-- at, which the ledger is compared as of: for a day, the end of that day, the next midnight
-- (UTC), exclusive. A page showed that moment alone ("2026-12-08 00:00:00 UTC" for a statement
-- closing on 2026-12-07); it now shows the statement's own date, and says what a day means.
ALTER TABLE ledger_statement_balances ADD COLUMN stated text;
-- The balances kept before: a midnight (UTC) was a day's end (the readers wrote no other
-- midnight but from a date-time that said it, which reads the same either way).
UPDATE ledger_statement_balances
SET stated = CASE
    WHEN as_of = date_trunc('day', as_of AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        THEN to_char((as_of AT TIME ZONE 'UTC')::date - 1, 'YYYY-MM-DD')
    ELSE to_char(as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')
END;
ALTER TABLE ledger_statement_balances
    ALTER COLUMN stated SET NOT NULL,
    ADD CONSTRAINT ledger_statement_balances_stated
        CHECK (stated ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:.]+([+-][0-9]{2}:[0-9]{2}))?$');

-- The readers' view gains the statement's own date of each account's last stated balance.
CREATE OR REPLACE VIEW statement_drift AS
SELECT s.source,
       s.table_name,
       s.account,
       s.closing AS statement_balance,
       s.as_of,
       ledger_balance_at(s.table_name, s.account, s.as_of) AS ledger_balance_then,
       s.closing - ledger_balance_at(s.table_name, s.account, s.as_of) AS drift,
       ledger_balance_at(s.table_name, s.account, 'infinity') AS ledger_balance_now,
       s.stated
FROM (
    SELECT DISTINCT ON (source, table_name, account)
           source, table_name, account, closing, as_of, stated
    FROM ledger_statement_balances
    ORDER BY source, table_name, account, as_of DESC, file_id DESC, statement DESC
) AS s;
