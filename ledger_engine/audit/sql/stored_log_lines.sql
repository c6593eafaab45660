-- Every stored line: its event row with its rejection, duplicate and executed request, if any
-- (`stored_log.StoredLog`'s lines), in (batch, position) order.
SELECT e.batch_id, e.position, e.source_file, e.line_number, e.outcome, e.stream,
       e.request_id, e.payload, r.reason, r.detail, r.raw_input, d.kind,
       coalesce(r.stream, d.stream), coalesce(r.request_id, d.request_id),
       q.request_id, q.fingerprint, q.outcome
FROM ledger_events e
LEFT JOIN ledger_rejections r USING (batch_id, position)
LEFT JOIN ledger_duplicates d USING (batch_id, position)
LEFT JOIN ledger_requests q USING (batch_id, position)
ORDER BY e.batch_id, e.position
