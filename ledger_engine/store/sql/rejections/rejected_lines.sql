-- The rejected lines in batch order: the file and line each came from, its batch and position,
-- stream and request id (where it had them), reason, detail and raw bytes; only those of the
-- file named %(file)s and of batch %(batch)s where these are given (not NULL).
SELECT e.source_file, e.line_number, r.batch_id, r.position, r.stream, r.request_id,
       r.reason, r.detail, r.raw_input
FROM ledger_rejections AS r
JOIN ledger_events AS e USING (batch_id, position)
WHERE (%(file)s::text IS NULL OR e.source_file = %(file)s)
  AND (%(batch)s::bigint IS NULL OR r.batch_id = %(batch)s)
ORDER BY r.batch_id, r.position
LIMIT %(limit)s;
