-- A page of the open breaks that pass the filters (a NULL filter passes every break), oldest
-- first, each with what became of the last write-off posted for it (its request's outcome:
-- applied, rejected, or NULL while the pipeline has not committed it), and how many breaks
-- pass the filters in all.
SELECT o.break_id, o.source, o.reason, o.account, o.statement_amount, o.ledger_amount,
       o.statement_reference, o.request_id, o.opened_at, o.write_off_request_id,
       q.outcome AS write_off_outcome,
       count(*) OVER () AS passing
FROM open_breaks AS o
LEFT JOIN ledger_requests AS q ON q.request_id = o.write_off_request_id
WHERE (%(source)s::text IS NULL OR o.source = %(source)s::text)
  AND (%(reason)s::text IS NULL OR o.reason = %(reason)s::text)
  AND (%(account)s::text IS NULL OR starts_with(o.account, %(account)s::text))
  AND (%(min_age_days)s::integer IS NULL
       OR o.opened_at <= clock_timestamp() - make_interval(days => %(min_age_days)s::integer))
ORDER BY o.opened_at, o.break_id
LIMIT %(limit)s;
