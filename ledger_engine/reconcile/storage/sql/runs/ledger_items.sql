-- The ledger's movements a run of the source considers (the scope in the specification,
-- ledger_engine/reconcile/matching): the movements of the accounts it reconciles, at or after
-- its start and through the last committed batch, that no match of the source holds, and the
-- movements in its open breaks. A movement before this run is settled (matched, or in an
-- open break) unless its account appears now, so it is read as:
--   1. the accounts its runs read before: their changes in the batches committed since its
--      last run (`ledger_recon_accounts`, limited to the declared rows where it declares them);
--   2. the accounts appearing now (`appearing`): each one's changes since the start, read by
--      its key (`ledger_change_log_row`), never another account's;
--   3. the changes in its open breaks (also those before a later start).
-- A movement's date is the value date its event gave, else the day its batch committed
-- (UTC); a change that moved nothing (a row written with its own value) is no movement.
-- Each appearing account's changes and each movement's event are read in a subquery that the
-- planner keeps per row (OFFSET 0, LIMIT 1: a lateral subquery with either is never turned
-- into a join), so that they are found by index whatever the statistics say: a join chosen
-- on statistics not yet gathered after a large batch would read a whole batch's events.
WITH candidates AS (
    SELECT c.batch_id, c.position, c.seq, c.key, c.request_id,
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
               AS amount
    FROM ledger_change_log AS c
    WHERE c.batch_id > %(after_batch)s AND c.batch_id <= %(through_batch)s
      AND c.batch_id >= %(from_batch)s AND c.table_name = %(table)s
      AND (%(declared)s::text[] IS NULL OR c.key = ANY (%(declared)s::text[]))
      AND EXISTS (
          SELECT 1
          FROM ledger_recon_accounts AS a
          WHERE (a.source, a.table_name, a.account) = (%(source)s, c.table_name, c.key))
    UNION
    SELECT c.batch_id, c.position, c.seq, c.key, c.request_id,
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
    FROM unnest(%(appearing)s::text[]) AS a(account)
    CROSS JOIN LATERAL (
        SELECT l.batch_id, l.position, l.seq, l.key, l.request_id, l.before, l.after
        FROM ledger_change_log AS l
        WHERE l.table_name = %(table)s AND l.key = a.account
          AND l.batch_id >= %(from_batch)s AND l.batch_id <= %(through_batch)s
        OFFSET 0
    ) AS c
), movements AS (
    SELECT m.*, true AS since_start
    FROM candidates AS m
    WHERE NOT EXISTS (
              SELECT 1
              FROM ledger_recon_matched_changes AS mc
              WHERE (mc.source, mc.batch_id, mc.position, mc.seq)
                  = (%(source)s, m.batch_id, m.position, m.seq))
      AND NOT EXISTS (
              SELECT 1
              FROM ledger_recon_breaks AS b
              WHERE b.source = %(source)s AND b.status = 'open'
                AND (b.batch_id, b.change_position, b.change_seq)
                  = (m.batch_id, m.position, m.seq))
    UNION ALL
    SELECT c.batch_id, c.position, c.seq, c.key, c.request_id,
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0),
           false
    FROM ledger_recon_breaks AS b
    JOIN ledger_change_log AS c
        ON (c.batch_id, c.position, c.seq) = (b.batch_id, b.change_position, b.change_seq)
    WHERE b.source = %(source)s AND b.status = 'open'
), dated AS (
    SELECT m.batch_id, m.position, m.seq, m.key, m.amount, m.since_start, e.day, e.reference,
           e.description, m.request_id
    FROM movements AS m
    CROSS JOIN LATERAL (
        SELECT coalesce(ledger_date_or_null(e.payload ->> 'value_date'),
                        (bt.committed_at AT TIME ZONE 'UTC')::date) AS day,
               e.payload ->> 'reference' AS reference, e.payload ->> 'description' AS description
        FROM ledger_events AS e
        JOIN ledger_batches AS bt USING (batch_id)
        WHERE (e.batch_id, e.position) = (m.batch_id, m.position)
        LIMIT 1
    ) AS e
    WHERE m.amount <> 0
)
SELECT batch_id, position, seq, key, amount, day, reference, description, request_id
FROM dated
WHERE NOT since_start OR %(from_date)s::date IS NULL OR day >= %(from_date)s::date
ORDER BY 1, 2, 3;
