-- The other open breaks of a source's account, oldest first: those a break may be matched
-- with by hand (the columns of open_breaks.sql, without its count).
SELECT o.break_id, o.source, o.reason, o.account, o.statement_amount, o.ledger_amount,
       o.statement_reference, o.request_id, o.opened_at, o.write_off_request_id,
       q.outcome AS write_off_outcome
FROM open_breaks AS o
LEFT JOIN ledger_requests AS q ON q.request_id = o.write_off_request_id
WHERE o.source = %(source)s AND o.account = %(account)s AND o.break_id <> %(break_id)s
ORDER BY o.opened_at, o.break_id
LIMIT %(limit)s;
