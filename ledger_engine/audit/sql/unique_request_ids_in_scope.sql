-- Request ids executed in the batch suite's scope that more than one executed event holds
-- (anywhere in the ledger). The executed events of all the scope's request ids are read in
-- one bitmap scan of the index on request ids, and counted by id; the events of an id held
-- twice are then read again to name them. {scope}: scope_batches.sql.
{scope},
requested AS MATERIALIZED (
    SELECT DISTINCT e.request_id
    FROM events AS e
    WHERE e.outcome <> 'duplicate' AND e.request_id IS NOT NULL
),
held_twice AS MATERIALIZED (
    SELECT x.request_id
    FROM ledger_events AS x
    WHERE x.request_id = ANY (ARRAY(SELECT r.request_id FROM requested AS r))
      AND x.outcome <> 'duplicate'
    GROUP BY x.request_id
    HAVING COUNT(*) > 1
)
SELECT x.request_id,
       COUNT(*) AS executed_events,
       string_agg(x.outcome || ' in batch ' || x.batch_id || ' at position ' || x.position, '; '
                  ORDER BY x.batch_id, x.position) AS events
FROM held_twice AS h
JOIN LATERAL (
    SELECT e.request_id, e.batch_id, e.position, e.outcome
    FROM ledger_events AS e
    WHERE e.request_id = h.request_id AND e.outcome <> 'duplicate'
    OFFSET 0
) AS x ON true
GROUP BY x.request_id
ORDER BY x.request_id
