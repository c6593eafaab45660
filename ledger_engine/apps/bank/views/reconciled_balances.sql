-- Each account's balance as of the last committed batch, with the request that last moved it;
-- where a statement spoke of the account, the last balance it stated and as of when, the
-- ledger's balance then, and the drift between them (statement - ledger; 0 when they agree).
-- Amounts are integer minor units, each with its text beside it as a person reads it in the
-- accounts' declared unit ("1,234.56 EUR": ledger_money_text, sql/0021_declared_units.sql).
SELECT a.key AS account_id,
       a.value AS balance,
       ledger_money_text(a.value, unit.unit_code, unit.unit_precision) AS balance_text,
       last_change.batch_id AS last_batch_id,
       last_change.request_id AS last_request_id,
       stated.statement_balance,
       ledger_money_text(stated.statement_balance, unit.unit_code, unit.unit_precision)
           AS statement_balance_text,
       stated.as_of AS statement_as_of,
       stated.ledger_balance_then,
       ledger_money_text(stated.ledger_balance_then, unit.unit_code, unit.unit_precision)
           AS ledger_balance_then_text,
       stated.drift,
       ledger_money_text(stated.drift, unit.unit_code, unit.unit_precision) AS drift_text,
       stated.source AS statement_source
FROM accounts AS a
-- The unit the accounts declare, read once (NULL, NULL where none: plain integers).
LEFT JOIN (
    SELECT d.unit_code, d.unit_precision
    FROM ledger_declared_tables AS d
    WHERE d.table_name = 'accounts'
) AS unit ON true
LEFT JOIN LATERAL (
    SELECT c.batch_id, c.request_id
    FROM ledger_change_log AS c
    WHERE c.table_name = 'accounts' AND c.key = a.key
    ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
    LIMIT 1
) AS last_change ON true
-- The latest statement of any source (a join, not a lookup per account: the drift is
-- computed for the accounts statements spoke of, however many accounts there are).
LEFT JOIN (
    SELECT DISTINCT ON (d.account) d.account, d.source, d.statement_balance, d.as_of,
           d.ledger_balance_then, d.drift
    FROM statement_drift AS d
    WHERE d.table_name = 'accounts'
    ORDER BY d.account, d.as_of DESC, d.source
) AS stated ON stated.account = a.key
