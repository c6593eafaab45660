-- What the batch audit (ledger_engine.audit.runner, after every pipeline run) needs to cost
-- what its batches cost, whatever the ledger's history: where each key's last proven change
-- is, and Merkle functions PostgreSQL can inline.

-- Each key's last change in the batches the audits have proven (ledger_engine.audit.last_changes).
--
-- The batch audit's chain rule checks that a key's first change in its scope starts from the
-- `after` of the key's change before the scope. Finding that change by key in the change log
-- means reading all the key's entries unless an index orders them by batch, and such an
-- index is most of a commit's cost (bench/studies/journal-writes.md). So the audits keep the
-- answer themselves, in two parts that together cover every key:
--
-- - the *recent* batches `recent_from` .. `through` (the one row of
--   ledger_audit_last_changes_through; `through` is the last mark's `audited_through`, and
--   the recent batches are usually just that batch): the rule reads them with its scope, so a
--   key they wrote finds its change there;
-- - for every other key, a pointer to its last change (batch, position, seq: the change log's
--   primary key), read with two primary-key probes, here and in the change log.
--
-- Every passing audit, in the transaction that records its mark, makes its last batch the
-- recent one and points the keys that only the batches before it wrote at their last change
-- (a batch's keys minus those the next one writes again: few rows). A key's pointer may be
-- older than its change in the recent batches; the rule prefers those. The rule uses all this
-- only when `through` is the batch before its scope, and otherwise looks the change up in the
-- change log by key. The pointers are no evidence: the rule reads the change they point at.
CREATE TABLE ledger_audit_last_changes (
    table_name text NOT NULL,
    key        text NOT NULL,
    batch_id   bigint NOT NULL CHECK (batch_id >= 0),
    position   integer NOT NULL,
    seq        integer NOT NULL,
    PRIMARY KEY (table_name, key)
) WITH (fillfactor = 80);  -- room for in-place (HOT) updates

CREATE TABLE ledger_audit_last_changes_through (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    through     bigint NOT NULL CHECK (through >= -1),
    recent_from bigint NOT NULL CHECK (recent_from >= 0 AND recent_from <= through + 1)
);

-- A ledger audited before this migration: its proven batches' last changes, once; no recent
-- batches.
INSERT INTO ledger_audit_last_changes (table_name, key, batch_id, position, seq)
SELECT DISTINCT ON (c.table_name, c.key) c.table_name, c.key, c.batch_id, c.position, c.seq
FROM ledger_change_log AS c
WHERE c.batch_id <= (SELECT max(m.audited_through) FROM ledger_audit_marks AS m)
ORDER BY c.table_name, c.key, c.batch_id DESC, c.position DESC, c.seq DESC;

INSERT INTO ledger_audit_last_changes_through (through, recent_from)
SELECT COALESCE(max(m.audited_through), -1), COALESCE(max(m.audited_through), -1) + 1
FROM ledger_audit_marks AS m;

-- Grants: the writer's DML and the auditor's SELECT come from the default privileges of
-- 0007_roles.sql; the audits update these rows with the engine's login, and never delete them.
REVOKE DELETE, TRUNCATE ON ledger_audit_last_changes FROM ledger_writer;
REVOKE INSERT, DELETE, TRUNCATE ON ledger_audit_last_changes_through FROM ledger_writer;

-- The Merkle functions of 0009_merkle_functions.sql, unchanged but declared STABLE, the
-- volatility of the convert_to they call. An SQL function declared IMMUTABLE whose body calls
-- a STABLE function is not inlined into the calling query but called: that call was about
-- half of each leaf's and bucket's cost (2 microseconds a row), which the batch audit pays
-- for every key its scope writes and a full audit for every row. Same bodies, same results
-- (tests/audit/test_merkle_sql.py).
CREATE OR REPLACE FUNCTION ledger_merkle_bucket(key_json text) RETURNS integer
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT ((('x' || encode(substr(sha256(convert_to(key_json, 'UTF8')), 1, 2), 'hex'))
             ::bit(16))::integer) >> 4
$$;

CREATE OR REPLACE FUNCTION ledger_merkle_leaf(key_json text, value_json text) RETURNS bytea
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT sha256(convert_to('[' || key_json || ',' || value_json || ']', 'UTF8'))
$$;
