-- The full suite's scope: the whole ledger. A rule over a scope begins with {scope} and reads
-- these relations, which scope_batches.sql gives the batch suite over its batches alone:
--   scope (first_batch, last_batch): batch 0 to the newest (-1 while there is none);
--   batches, events: the batch rows and the events of those batches;
--   logged (log, batch_id, position, request_id): the rows of those batches in the other log
--     tables keyed by batch, each named by its table;
--   requests: the executed request ids, all of them.
-- Here each relation is the table itself: PostgreSQL inlines it into the rule that reads it,
-- so the rule reads whole tables along their index orders as if it named them, and knows
-- their sizes when it plans.
WITH scope AS (
    SELECT CAST(0 AS bigint) AS first_batch, COALESCE(MAX(b.batch_id), -1) AS last_batch
    FROM ledger_batches AS b
),
batches AS NOT MATERIALIZED (
    SELECT b.* FROM ledger_batches AS b
),
events AS NOT MATERIALIZED (
    SELECT e.batch_id, e.position, e.outcome, e.request_id FROM ledger_events AS e
),
logged (log, batch_id, position, request_id) AS NOT MATERIALIZED (
    SELECT 'ledger_rejections', batch_id, position, request_id FROM ledger_rejections
    UNION ALL SELECT 'ledger_duplicates', batch_id, position, request_id FROM ledger_duplicates
    UNION ALL SELECT 'ledger_change_log', batch_id, position, request_id FROM ledger_change_log
    UNION ALL SELECT 'ledger_results', batch_id, position, request_id FROM ledger_results
),
requests AS NOT MATERIALIZED (
    SELECT q.request_id, q.batch_id, q.position, q.outcome FROM ledger_requests AS q
)
