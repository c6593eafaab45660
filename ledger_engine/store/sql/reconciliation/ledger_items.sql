-- The ledger's movements a run of the source considers: changes of its accounts' rows in the
-- batches committed since its last run, and those still in its open breaks. A movement's date
-- is the value date its event gave, else the day its batch committed (UTC); a change that
-- moved nothing (a row written with its own value) is no movement.
WITH movements AS (
    SELECT c.batch_id, c.position, c.seq, c.key, c.request_id,
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
               AS amount
    FROM ledger_change_log AS c
    WHERE c.batch_id > %(after_batch)s AND c.batch_id <= %(through_batch)s
      AND c.table_name = %(table)s AND c.key = ANY (%(accounts)s)
    UNION
    SELECT c.batch_id, c.position, c.seq, c.key, c.request_id,
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
    FROM ledger_recon_breaks AS b
    JOIN ledger_change_log AS c
        ON (c.batch_id, c.position, c.seq) = (b.batch_id, b.change_position, b.change_seq)
    WHERE b.source = %(source)s AND b.status = 'open'
)
SELECT m.batch_id, m.position, m.seq, m.key, m.amount,
       coalesce(ledger_date_or_null(e.payload ->> 'value_date'),
                (bt.committed_at AT TIME ZONE 'UTC')::date),
       e.payload ->> 'reference', e.payload ->> 'description', m.request_id
FROM movements AS m
JOIN ledger_events AS e USING (batch_id, position)
JOIN ledger_batches AS bt USING (batch_id)
WHERE m.amount <> 0
ORDER BY 1, 2, 3;
