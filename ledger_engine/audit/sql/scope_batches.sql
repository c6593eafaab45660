-- The batch suite's scope: the batches after the last passing audit's mark, to the newest.
-- The relations are those of scope_ledger.sql (which says what each holds), over the scope:
--   scope: the audit scope's one row, {batch}, read once;
--   batches, events, logged: the rows of the scope's batches, read by ranges of the tables'
--     primary keys, which start with batch_id. The bounds are scalar subqueries, values
--     PostgreSQL knows before it scans; every range is closed at both ends (for a range of
--     two unknown bounds PostgreSQL guesses 0.5% of the table and reads it by index, for an
--     open one a third, and reads the whole table). `logged` is bounded once, and PostgreSQL
--     moves the bound into each table's scan. The events are read once for every branch
--     that meets them (MATERIALIZED);
--   requests: the executed request ids of the scope's executed events, found by one probe of
--     the primary key with their array. An executed request id that points into the scope
--     without an event of its id is the full audit's to find: the table has no index by batch.
WITH scope AS MATERIALIZED (
    SELECT s.first_batch, s.last_batch FROM {batch} AS s
),
batches AS NOT MATERIALIZED (
    SELECT b.* FROM ledger_batches AS b
    WHERE b.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                         AND (SELECT scope.last_batch FROM scope)
),
events AS MATERIALIZED (
    SELECT e.batch_id, e.position, e.outcome, e.request_id FROM ledger_events AS e
    WHERE e.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                         AND (SELECT scope.last_batch FROM scope)
),
logged (log, batch_id, position, request_id) AS NOT MATERIALIZED (
    SELECT l.log, l.batch_id, l.position, l.request_id
    FROM (
        SELECT 'ledger_rejections', batch_id, position, request_id FROM ledger_rejections
        UNION ALL SELECT 'ledger_duplicates', batch_id, position, request_id FROM ledger_duplicates
        UNION ALL SELECT 'ledger_change_log', batch_id, position, request_id FROM ledger_change_log
        UNION ALL SELECT 'ledger_results', batch_id, position, request_id FROM ledger_results
    ) AS l (log, batch_id, position, request_id)
    WHERE l.batch_id BETWEEN (SELECT scope.first_batch FROM scope)
                         AND (SELECT scope.last_batch FROM scope)
),
requests AS MATERIALIZED (
    SELECT q.request_id, q.batch_id, q.position, q.outcome
    FROM ledger_requests AS q
    WHERE q.request_id = ANY (ARRAY(
        SELECT e.request_id FROM events AS e
        WHERE e.outcome <> 'duplicate' AND e.request_id IS NOT NULL
    ))
)
