-- Events of the scope not accounted for exactly once, named by batch and position (with the
-- event's outcome and request id, if the event exists) and what is wrong there. A rejected
-- event has its rejection and a duplicate its duplicate row, and no other event has either;
-- an executed event with a request id has its executed request id, pointing back to it with
-- its outcome; every change-log entry and result belongs to an applied event; every row
-- names its event's request id; and each batch's events sit at positions 0, 1, 2, ... without
-- a gap (an event row deleted). Over the scope's relations ({scope}: scope_*.sql); reads the
-- logs only. Each log meets the events in one join on their shared key (the primary keys, or
-- the request ids of executed events), so no branch sorts or groups more than the offending
-- rows.
{scope},
-- What a row of each log is called, and the outcome of the event it must belong to: exactly
-- one per such event and none for any other, or any number for an applied event.
kinds (log, kind, outcome, one_per_event, without, naming) AS (
    VALUES ('ledger_rejections', 'rejection', 'rejected', true,
            ' without its event', ' names request id '),
           ('ledger_duplicates', 'duplicate row', 'duplicate', true,
            ' without its event', ' names request id '),
           ('ledger_change_log', 'change-log entries', 'applied', false,
            ' without their event', ' name request id '),
           ('ledger_results', 'results', 'applied', false,
            ' without their event', ' name request id ')
),
problems AS (
    -- A rejected or duplicate event without its row (the logs named as constants, so that
    -- PostgreSQL reads those two alone).
    SELECT e.batch_id, e.position, e.outcome || ' event without its ' || k.kind AS problem
    FROM events AS e
    JOIN kinds AS k ON k.outcome = e.outcome AND k.one_per_event
    LEFT JOIN logged AS x
      ON x.log IN ('ledger_rejections', 'ledger_duplicates')
     AND x.log = k.log AND x.batch_id = e.batch_id AND x.position = e.position
    WHERE x.log IS NULL
    UNION ALL
    -- A log row without its event, of an event of another outcome, or naming another id.
    SELECT DISTINCT x.batch_id, x.position,
           CASE WHEN e.position IS NULL THEN k.kind || k.without
                WHEN e.outcome <> k.outcome THEN k.kind || ' of an event that was ' || e.outcome
                ELSE k.kind || k.naming || quote_nullable(x.request_id)
           END AS problem
    FROM logged AS x
    JOIN kinds AS k ON k.log = x.log
    LEFT JOIN events AS e ON e.batch_id = x.batch_id AND e.position = x.position
    WHERE e.position IS NULL
       OR e.outcome <> k.outcome
       OR x.request_id IS DISTINCT FROM e.request_id
    UNION ALL
    -- Executed events and executed request ids, met on the request id (over the whole
    -- ledger: the partial unique index on executed events' ids and the requests' primary
    -- key, both in request id order, one merge join).
    SELECT COALESCE(e.batch_id, q.batch_id), COALESCE(e.position, q.position),
           CASE WHEN q.request_id IS NULL
                    THEN 'executed event without its executed request id'
                WHEN e.request_id IS NULL
                    THEN 'executed request id without an executed event of that id'
                WHEN q.batch_id <> e.batch_id OR q.position <> e.position
                    THEN 'its executed request id points to batch ' || q.batch_id
                         || ', position ' || q.position
                ELSE 'executed request id says ' || q.outcome || ', the event was ' || e.outcome
           END
    FROM (
        SELECT x.batch_id, x.position, x.outcome, x.request_id
        FROM events AS x
        WHERE x.outcome <> 'duplicate' AND x.request_id IS NOT NULL
    ) AS e
    FULL OUTER JOIN requests AS q ON q.request_id = e.request_id
    WHERE q.request_id IS NULL
       OR e.request_id IS NULL
       OR q.batch_id <> e.batch_id
       OR q.position <> e.position
       OR q.outcome <> e.outcome
    UNION ALL
    -- Gaps in a batch's positions, read in order (a sort) only in batches whose events do
    -- not simply count 0 .. n - 1, which one pass of counting finds.
    SELECT g.batch_id, g.previous + 1,
           CASE WHEN g.position = g.previous + 2 THEN 'no event at this position'
                ELSE 'no events at positions ' || (g.previous + 1) || ' to ' || (g.position - 1)
           END
    FROM (
        SELECT e.batch_id, e.position,
               COALESCE(lag(e.position) OVER (PARTITION BY e.batch_id ORDER BY e.position), -1)
                   AS previous
        FROM events AS e
        WHERE e.batch_id IN (
            SELECT c.batch_id FROM events AS c
            GROUP BY c.batch_id
            HAVING count(*) <> max(c.position) + 1 OR min(c.position) <> 0
        )
    ) AS g
    WHERE g.position <> g.previous + 1
)
SELECT p.batch_id, p.position, e.outcome, e.request_id,
       string_agg(DISTINCT p.problem, '; ') AS problem
FROM problems AS p
LEFT JOIN events AS e ON e.batch_id = p.batch_id AND e.position = p.position
GROUP BY p.batch_id, p.position, e.outcome, e.request_id
ORDER BY p.batch_id, p.position
