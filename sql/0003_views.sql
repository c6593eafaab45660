-- Views for people and reports; the read-only role (a later migration) sees only these and the
-- views an application declares (ledger_engine.store.schema).

-- What became of each request id: applied (with its batch), rejected (with the reason), and
-- every duplicate that followed it.
CREATE VIEW request_outcomes AS
SELECT e.request_id,
       e.stream,
       e.outcome,
       e.batch_id,
       e.position,
       r.reason AS rejection_reason,
       d.kind AS duplicate_kind
FROM ledger_events AS e
LEFT JOIN ledger_rejections AS r USING (batch_id, position)
LEFT JOIN ledger_duplicates AS d USING (batch_id, position)
WHERE e.request_id IS NOT NULL;
