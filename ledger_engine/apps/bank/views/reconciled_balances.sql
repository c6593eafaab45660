-- Each account's balance as of the last committed batch, with the request that last moved it.
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
) AS last_change ON true
