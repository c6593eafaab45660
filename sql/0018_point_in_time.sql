-- Point-in-time values of any ledger row (ledger_engine.reconcile, and readers): what the row
-- held as of a moment, or as of a batch, read from the change log through its index on key,
-- so that the cost is that row's own changes, not the ledger's. NULL where the row did not
-- exist then (never written, or deleted). "As of a moment" means as committed by then: the
-- ledger's knowledge at that time, which is what a statement's closing balance is compared with.

CREATE FUNCTION ledger_value_at_batch(p_table text, p_key text, p_batch bigint) RETURNS jsonb
LANGUAGE sql STABLE STRICT AS $$
    SELECT c.after
    FROM ledger_change_log AS c
    WHERE c.key = p_key AND c.table_name = p_table AND c.batch_id <= p_batch
    ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
    LIMIT 1
$$;

CREATE FUNCTION ledger_value_at(p_table text, p_key text, p_as_of timestamptz) RETURNS jsonb
LANGUAGE sql STABLE STRICT AS $$
    SELECT c.after
    FROM ledger_change_log AS c
    JOIN ledger_batches AS b USING (batch_id)
    WHERE c.key = p_key AND c.table_name = p_table AND b.committed_at <= p_as_of
    ORDER BY c.batch_id DESC, c.position DESC, c.seq DESC
    LIMIT 1
$$;

-- The same for a table of integers (minor units): a missing row holds 0, as a balance does.
CREATE FUNCTION ledger_balance_at(p_table text, p_key text, p_as_of timestamptz) RETURNS bigint
LANGUAGE sql STABLE STRICT AS $$
    SELECT coalesce((ledger_value_at(p_table, p_key, p_as_of) #>> '{}')::bigint, 0)
$$;

CREATE FUNCTION ledger_balance_at_batch(p_table text, p_key text, p_batch bigint) RETURNS bigint
LANGUAGE sql STABLE STRICT AS $$
    SELECT coalesce((ledger_value_at_batch(p_table, p_key, p_batch) #>> '{}')::bigint, 0)
$$;

-- Readers may ask for any row's past without reading the change log itself: the functions
-- run with their owner's rights, on this ledger's schema alone (a fixed search_path, so that
-- no object of a caller's can stand in for the log).
DO $definer$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY[
        'ledger_value_at_batch(text, text, bigint)',
        'ledger_value_at(text, text, timestamptz)',
        'ledger_balance_at(text, text, timestamptz)',
        'ledger_balance_at_batch(text, text, bigint)'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_temp',
                       fn, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO ledger_reader, ledger_writer, '
                       'ledger_auditor', fn);
    END LOOP;
END
$definer$;
