-- The audit scope bound as parameters, the direct form of `{batch}` in the batch suite's rules
-- (`expectations.queries.bound_to_scope`), for the audit's own transactions.
SELECT CAST(:first_batch AS bigint) AS first_batch, CAST(:last_batch AS bigint) AS last_batch
