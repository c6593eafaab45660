-- PostgreSQL alone, in one procedure: the benchmark's `procedure` variant (bench/procedure.py).
-- Each section starts at a `-- name: <section>` line; bench/procedure.py runs them by name.
-- Values only ever arrive by COPY or as bind parameters.

-- name: schema
-- A copy of the real change log's columns and indexes (primary key, row index); LIKE does not
-- copy its foreign keys, which need ledger_batches and ledger_events rows this variant does
-- not write.
DROP TABLE IF EXISTS bench_change_log;
CREATE TABLE bench_change_log (LIKE ledger_change_log INCLUDING ALL);

-- Applies the staged transfers in position order with the bank app's rule
-- (ledger_engine/apps/bank/ledger.py), writing `accounts` and `asset_ledger` and, for every applied
-- transfer, one change-log row per row written, in the engine's order: the rows in binding
-- order (source account, target account, source asset, target asset, fee account), each row
-- once. The engine gives the bindings of one row a single buffer, so a self-transfer writes
-- its account and its asset entry once each (netting to the fee and to zero), and a fee paid
-- into the source or target account is part of that row's one write.
-- A deposit (no source) credits its account and asset entry: two ADDs, never rejected.
CREATE OR REPLACE PROCEDURE bench_apply_transfers(
    batch bigint,
    INOUT applied bigint DEFAULT NULL,
    INOUT rejected bigint DEFAULT NULL
)
LANGUAGE plpgsql AS $$
DECLARE
    t record;
    seq integer;
    fee bigint;
    fee_row text;           -- the account the fee is paid into; NULL without a fee
    balance bigint;         -- the source account's balance, 0 without a row (read_or(0))
    asset_value bigint;     -- the source asset entry's amount, 0 without a row
    source_after bigint;
    asset_after bigint;
    delta bigint;
    before_value bigint;
    after_value bigint;
BEGIN
    applied := 0;
    rejected := 0;
    FOR t IN SELECT * FROM bench_staged_transfers ORDER BY position LOOP
        seq := 0;
        fee := coalesce(t.fee, 0);
        fee_row := CASE WHEN t.fee IS NULL THEN NULL ELSE t.fee_account END;

        -- The source account: read, checked, debited (a transfer only).
        IF t.source_account IS NOT NULL THEN
            SELECT value INTO balance FROM accounts WHERE key = t.source_account;
            balance := coalesce(balance, 0);
            SELECT value INTO asset_value FROM asset_ledger WHERE key = t.source_asset;
            asset_value := coalesce(asset_value, 0);
            IF NOT (balance > t.min_balance AND balance > t.amount + fee
                    AND asset_value > t.asset_amount) THEN
                rejected := rejected + 1;
                CONTINUE;
            END IF;
            source_after := balance - t.amount - fee
                + CASE WHEN t.target_account = t.source_account THEN t.amount ELSE 0 END
                + CASE WHEN fee_row = t.source_account THEN fee ELSE 0 END;
            UPDATE accounts SET value = source_after WHERE key = t.source_account;
            INSERT INTO bench_change_log
                (batch_id, position, seq, request_id, table_name, key, before, after)
            VALUES (batch, t.position, seq, t.request_id, 'accounts', t.source_account,
                    to_jsonb(balance), to_jsonb(source_after));
            seq := seq + 1;
        END IF;

        -- The target account (a deposit's account), unless it is the source's row: credited
        -- with the amount, and the fee when it is also the fee account.
        IF t.target_account IS DISTINCT FROM t.source_account THEN
            delta := t.amount + CASE WHEN fee_row = t.target_account THEN fee ELSE 0 END;
            UPDATE accounts SET value = value + delta WHERE key = t.target_account
                RETURNING value INTO after_value;
            IF FOUND THEN
                before_value := after_value - delta;
            ELSE
                INSERT INTO accounts (key, value) VALUES (t.target_account, delta);
                before_value := NULL;  -- no row before: the change log's before is NULL
                after_value := delta;
            END IF;
            INSERT INTO bench_change_log
                (batch_id, position, seq, request_id, table_name, key, before, after)
            VALUES (batch, t.position, seq, t.request_id, 'accounts', t.target_account,
                    to_jsonb(before_value), to_jsonb(after_value));
            seq := seq + 1;
        END IF;

        -- The source asset entry: debited (a transfer only), credited back on a self-transfer.
        IF t.source_account IS NOT NULL THEN
            asset_after := asset_value - t.asset_amount
                + CASE WHEN t.target_asset = t.source_asset THEN t.asset_amount ELSE 0 END;
            UPDATE asset_ledger SET value = asset_after WHERE key = t.source_asset;
            INSERT INTO bench_change_log
                (batch_id, position, seq, request_id, table_name, key, before, after)
            VALUES (batch, t.position, seq, t.request_id, 'asset_ledger', t.source_asset,
                    to_jsonb(asset_value), to_jsonb(asset_after));
            seq := seq + 1;
        END IF;

        -- The target asset entry (a deposit's asset entry), unless it is the source's row.
        IF t.target_asset IS DISTINCT FROM t.source_asset THEN
            UPDATE asset_ledger SET value = value + t.asset_amount WHERE key = t.target_asset
                RETURNING value INTO after_value;
            IF FOUND THEN
                before_value := after_value - t.asset_amount;
            ELSE
                INSERT INTO asset_ledger (key, value) VALUES (t.target_asset, t.asset_amount);
                before_value := NULL;
                after_value := t.asset_amount;
            END IF;
            INSERT INTO bench_change_log
                (batch_id, position, seq, request_id, table_name, key, before, after)
            VALUES (batch, t.position, seq, t.request_id, 'asset_ledger', t.target_asset,
                    to_jsonb(before_value), to_jsonb(after_value));
            seq := seq + 1;
        END IF;

        -- The fee account, unless it is the source's or the target's row (paid in above).
        IF fee_row IS NOT NULL AND fee_row <> t.source_account AND fee_row <> t.target_account
        THEN
            UPDATE accounts SET value = value + fee WHERE key = fee_row
                RETURNING value INTO after_value;
            IF FOUND THEN
                before_value := after_value - fee;
            ELSE
                INSERT INTO accounts (key, value) VALUES (fee_row, fee);
                before_value := NULL;
                after_value := fee;
            END IF;
            INSERT INTO bench_change_log
                (batch_id, position, seq, request_id, table_name, key, before, after)
            VALUES (batch, t.position, seq, t.request_id, 'accounts', fee_row,
                    to_jsonb(before_value), to_jsonb(after_value));
        END IF;
        applied := applied + 1;
    END LOOP;
END
$$;

-- name: staging
-- The transfers to apply, COPYed in by the variant. A temporary table: the staged input is
-- scratch that no crash recovery needs, so it is written without WAL (as an unlogged table
-- would be) and is private to this session, and ON COMMIT DROP removes it with the
-- transaction. What must be durable, the state tables and the change log, are logged tables.
-- A deposit has no source account, source asset or fee. The checks refuse amounts the bank
-- app would abort (not positive; a negative fee), so that such input fails loudly here
-- instead of being applied.
CREATE TEMPORARY TABLE bench_staged_transfers (
    position       integer NOT NULL,
    request_id     text NOT NULL,
    source_account text,
    target_account text NOT NULL,
    source_asset   text,
    target_asset   text NOT NULL,
    amount         bigint NOT NULL CHECK (amount > 0),
    asset_amount   bigint NOT NULL CHECK (asset_amount > 0),
    fee            bigint CHECK (fee >= 0),
    fee_account    text,
    min_balance    bigint NOT NULL DEFAULT 0,
    CHECK ((source_account IS NULL) = (source_asset IS NULL)),
    CHECK ((fee IS NULL) = (fee_account IS NULL)),
    CHECK (source_account IS NOT NULL OR fee IS NULL)
) ON COMMIT DROP;

-- name: copy
COPY bench_staged_transfers (
    position, request_id, source_account, target_account, source_asset, target_asset,
    amount, asset_amount, fee, fee_account
) FROM STDIN WITH (FORMAT csv)

-- name: call
CALL bench_apply_transfers(%(batch)s, NULL, NULL)
