-- Every movement of an account, oldest first: a statement, with what reconciliation matches
-- it by where the event gave it (its external reference, value date and description).
SELECT c.key AS account_id,
       c.batch_id,
       c.position,
       e.stream,
       c.request_id,
       COALESCE((c.after #>> '{}')::bigint, 0) - COALESCE((c.before #>> '{}')::bigint, 0) AS amount,
       (c.after #>> '{}')::bigint AS balance_after,
       b.committed_at,
       e.payload ->> 'reference' AS reference,
       (e.payload ->> 'value_date')::date AS value_date,
       e.payload ->> 'description' AS description
FROM ledger_change_log AS c
JOIN ledger_events AS e USING (batch_id, position)
JOIN ledger_batches AS b USING (batch_id)
WHERE c.table_name = 'accounts'
