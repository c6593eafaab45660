-- The breaks named, locked until the transaction ends, with their items' amounts and dates (an
-- item's date as a run reads it: the value date, else the booking date or the day its batch
-- committed), the last write-off posted for each (its request id and note, how many were
-- posted, and what became of that request: applied, rejected, or NULL while not committed).
SELECT b.break_id, b.source, b.reason, b.status, b.account,
       b.file_id, b.position, b.batch_id, b.change_position, b.change_seq,
       e.amount AS statement_amount,
       coalesce(e.value_date, e.booking_date) AS statement_date,
       CASE WHEN c.batch_id IS NOT NULL THEN
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
       END AS ledger_amount,
       coalesce(ledger_date_or_null(ev.payload ->> 'value_date'),
                (bt.committed_at AT TIME ZONE 'UTC')::date) AS ledger_date,
       posted.request_id AS posted_request_id,
       posted.note AS posted_note,
       coalesce(posted.attempts, 0) AS posted_attempts,
       q.outcome AS posted_outcome
FROM ledger_recon_breaks AS b
LEFT JOIN ledger_statement_entries AS e USING (file_id, position)
LEFT JOIN ledger_change_log AS c
    ON (c.batch_id, c.position, c.seq) = (b.batch_id, b.change_position, b.change_seq)
LEFT JOIN ledger_events AS ev ON (ev.batch_id, ev.position) = (c.batch_id, c.position)
LEFT JOIN ledger_batches AS bt ON bt.batch_id = c.batch_id
LEFT JOIN LATERAL (
    SELECT h.request_id, h.note, count(*) OVER () AS attempts
    FROM ledger_recon_break_history AS h
    WHERE h.break_id = b.break_id AND h.action = 'write_off_posted'
    ORDER BY h.seq DESC
    LIMIT 1
) AS posted ON true
LEFT JOIN ledger_requests AS q ON q.request_id = posted.request_id
WHERE b.break_id = ANY (%(break_ids)s)
ORDER BY b.break_id
FOR UPDATE OF b;
