-- Every committed event that carried a request id, in commit order: the one that executed
-- it, and its duplicates (sql/0006).
SELECT stream, outcome, batch_id, position, committed_at, rejection_reason,
    rejection_detail, duplicate_kind, duplicate_of_batch_id, duplicate_of_position, results
FROM request_outcomes WHERE request_id = %(request_id)s ORDER BY batch_id, position;
