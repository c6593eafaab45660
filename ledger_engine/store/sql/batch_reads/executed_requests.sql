-- The fingerprints of those of a batch's request ids that committed batches executed: an
-- index probe per id.
SELECT request_id, fingerprint FROM ledger_requests WHERE request_id = ANY(%s::text[]);
