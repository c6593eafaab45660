-- Views for people and reports; the read-only role (a later migration) sees only these.

-- Each account's balance as of the last committed batch, with the request that last moved it.
CREATE VIEW reconciled_balances AS
SELECT a.key AS account_id,
       a.value AS balance,
       last_change.batch_id AS last_batch_id,
       last_change.request_id AS last_request_id
FROM accounts AS a
LEFT JOIN LATERAL (
    SELECT c.batch_id, c.request_id
    FROM ledger_change_log AS c
    WHERE c.table_name = 'accounts' AND c.key = a.key
    ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
    LIMIT 1
) AS last_change ON true;

-- Every movement of an account, oldest first: a statement.
CREATE VIEW account_statements AS
SELECT c.key AS account_id,
       c.batch_id,
       c.position,
       e.stream,
       c.request_id,
       COALESCE((c.after #>> '{}')::bigint, 0) - COALESCE((c.before #>> '{}')::bigint, 0) AS amount,
       (c.after #>> '{}')::bigint AS balance_after,
       b.committed_at
FROM ledger_change_log AS c
JOIN ledger_events AS e USING (batch_id, position)
JOIN ledger_batches AS b USING (batch_id)
WHERE c.table_name = 'accounts';

-- What became of each request id: applied (with its batch), rejected (with the reason), and
-- every duplicate that followed it.
CREATE VIEW request_outcomes AS
SELECT e.request_id,
       e.stream,
       e.outcome,
       e.batch_id,
       e.position,
       r.reason AS rejection_reason,
       d.kind AS duplicate_kind
FROM ledger_events AS e
LEFT JOIN ledger_rejections AS r USING (batch_id, position)
LEFT JOIN ledger_duplicates AS d USING (batch_id, position)
WHERE e.request_id IS NOT NULL;
