-- Of the given event file names (%(names)s, a text array), each one a committed batch took:
-- the batch that took it and when that batch committed.
SELECT taken.name, b.batch_id, b.committed_at
FROM ledger_batches AS b
CROSS JOIN LATERAL jsonb_array_elements_text(b.input_files) AS taken(name)
WHERE taken.name = ANY(%(names)s)
ORDER BY b.batch_id;
