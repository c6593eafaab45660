-- Every movement of an account, oldest first: a statement, with what reconciliation matches
-- it by where the event gave it (its external reference, value date and description). The
-- amount and the balance after it are integer minor units, each with its text beside it as
-- a person reads it in the accounts' declared unit ("-12.50 EUR": ledger_money_text,
-- sql/0021_declared_units.sql).
SELECT c.key AS account_id,
       c.batch_id,
       c.position,
       e.stream,
       c.request_id,
       m.amount,
       ledger_money_text(m.amount, unit.unit_code, unit.unit_precision) AS amount_text,
       m.balance_after,
       ledger_money_text(m.balance_after, unit.unit_code, unit.unit_precision)
           AS balance_after_text,
       b.committed_at,
       e.payload ->> 'reference' AS reference,
       (e.payload ->> 'value_date')::date AS value_date,
       e.payload ->> 'description' AS description
FROM ledger_change_log AS c
JOIN ledger_events AS e USING (batch_id, position)
JOIN ledger_batches AS b USING (batch_id)
CROSS JOIN LATERAL (
    SELECT COALESCE((c.after #>> '{}')::bigint, 0) - COALESCE((c.before #>> '{}')::bigint, 0)
               AS amount,
           (c.after #>> '{}')::bigint AS balance_after
) AS m
-- The unit the accounts declare, read once (NULL, NULL where none: plain integers).
LEFT JOIN (
    SELECT d.unit_code, d.unit_precision
    FROM ledger_declared_tables AS d
    WHERE d.table_name = 'accounts'
) AS unit ON true
WHERE c.table_name = 'accounts'
