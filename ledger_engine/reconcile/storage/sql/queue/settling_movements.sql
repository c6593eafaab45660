-- The ledger movements of the match that resolved a break, other than the break's own: the
-- adjusting event of a settled write-off, or the movements it was matched with (by hand or by
-- a later run), each with its event's stream and the batch that committed it.
SELECT c.batch_id, c.position AS change_position, c.seq AS change_seq,
       c.request_id, c.table_name, c.key AS row_key, ev.stream, bt.committed_at,
       coalesce((c.after #>> '{}')::bigint, 0) - coalesce((c.before #>> '{}')::bigint, 0)
           AS ledger_amount
FROM ledger_recon_breaks AS b
JOIN ledger_recon_break_history AS h ON h.break_id = b.break_id AND h.match_id IS NOT NULL
JOIN ledger_recon_matched_changes AS m ON m.match_id = h.match_id
JOIN ledger_change_log AS c ON (c.batch_id, c.position, c.seq) = (m.batch_id, m.position, m.seq)
LEFT JOIN ledger_events AS ev ON (ev.batch_id, ev.position) = (c.batch_id, c.position)
LEFT JOIN ledger_batches AS bt ON bt.batch_id = c.batch_id
WHERE b.break_id = %(break_id)s
  AND (c.batch_id, c.position, c.seq)
      IS DISTINCT FROM (b.batch_id, b.change_position, b.change_seq)
ORDER BY c.batch_id, c.position, c.seq;
