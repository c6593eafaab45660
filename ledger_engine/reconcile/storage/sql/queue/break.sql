-- One break, open or resolved, with its statement entry (and the file it came in) and its
-- ledger movement (the change, its event's stream and the batch that committed it), and the
-- last write-off posted for it with that request's outcome (NULL while not committed).
SELECT b.break_id, b.source, b.reason, b.account, b.status, b.resolution,
       b.opened_at, b.resolved_at, b.opened_run_id,
       b.file_id, b.position,
       f.file_name, e.amount AS statement_amount, e.booking_date, e.value_date,
       e.reference AS statement_reference, e.servicer_reference,
       e.description AS statement_description,
       b.batch_id, b.change_position, b.change_seq,
       c.request_id, c.table_name, c.key AS row_key, ev.stream, bt.committed_at,
       CASE WHEN c.batch_id IS NOT NULL THEN
           coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
       END AS ledger_amount,
       posted.request_id AS write_off_request_id,
       q.outcome AS write_off_outcome
FROM ledger_recon_breaks AS b
LEFT JOIN ledger_statement_entries AS e USING (file_id, position)
LEFT JOIN ledger_statement_files AS f ON f.file_id = b.file_id
LEFT JOIN ledger_change_log AS c
    ON (c.batch_id, c.position, c.seq) = (b.batch_id, b.change_position, b.change_seq)
LEFT JOIN ledger_events AS ev ON (ev.batch_id, ev.position) = (c.batch_id, c.position)
LEFT JOIN ledger_batches AS bt ON bt.batch_id = c.batch_id
LEFT JOIN LATERAL (
    SELECT h.request_id
    FROM ledger_recon_break_history AS h
    WHERE h.break_id = b.break_id AND h.action = 'write_off_posted'
    ORDER BY h.seq DESC
    LIMIT 1
) AS posted ON true
LEFT JOIN ledger_requests AS q ON q.request_id = posted.request_id
WHERE b.break_id = %(break_id)s;
