-- Each key's change before a batch, written by the batch's commit (ledger_engine.store.commit),
-- in place of the audits' pointers of 0013_batch_audit.sql.
--
-- The batch audit's chain rule checks that a key's first change in its scope starts from the
-- `after` of the key's change before the scope. The change log has no index that orders a
-- key's changes by batch (it would be most of a commit's cost), so the audits kept pointers to
-- each key's last proven change and moved them at every mark: an upsert of every key a batch
-- wrote, about a fifth of a batch audit's PostgreSQL work. The commit knows the answer for
-- free instead: every declared table's row now names its last change (the change log's primary
-- key: last_change_batch, last_change_position, last_change_seq), which the commit sets where it
-- applies the row's net change; and before that, for each key's first change in the batch whose
-- row exists, it writes a link from that change to the change the row names. A key's first
-- change without a link had no row before it (never written, or deleted): it must start from
-- nothing. The links are the commit's claims, not evidence: the audit reads the change a link
-- names (one probe of the change log's primary key) and checks that it is the same key's, that
-- it comes before, and that its `after` is where the chain continues from; a link that skips
-- a change moves the key's Merkle leaf by a `before` the tree never held.
CREATE TABLE ledger_change_links (
    batch_id      bigint NOT NULL,
    position      integer NOT NULL,
    seq           integer NOT NULL,
    prev_batch    bigint NOT NULL,
    prev_position integer NOT NULL,
    prev_seq      integer NOT NULL,
    PRIMARY KEY (batch_id, position, seq),
    CHECK ((prev_batch, prev_position, prev_seq) < (batch_id, position, seq))
);

-- Append-only for the writer, as the rest of the log (0007_roles.sql); the auditor's SELECT
-- comes from the default privileges.
REVOKE UPDATE, DELETE, TRUNCATE ON ledger_change_links FROM ledger_writer;

-- Give a declared table the columns naming each row's last change and fill them from the
-- change log: for the declared tables of a ledger migrated before this file, and for a table
-- the generated migration adopts (ledger_engine.store.schema). Reads the table's whole log:
-- once per table, at a migration.
CREATE FUNCTION ledger_track_last_changes(p_table regclass, p_table_name text) RETURNS void
LANGUAGE plpgsql AS $track$
BEGIN
    EXECUTE format(
        'ALTER TABLE %s ADD COLUMN IF NOT EXISTS last_change_batch bigint,'
        ' ADD COLUMN IF NOT EXISTS last_change_position integer,'
        ' ADD COLUMN IF NOT EXISTS last_change_seq integer', p_table);
    EXECUTE format(
        'UPDATE %s AS t SET last_change_batch = l.batch_id, last_change_position = l.position,'
        ' last_change_seq = l.seq'
        ' FROM (SELECT DISTINCT ON (c.key) c.key, c.batch_id, c.position, c.seq'
        '       FROM ledger_change_log AS c WHERE c.table_name = $1'
        '       ORDER BY c.key, c.batch_id DESC, c.position DESC, c.seq DESC) AS l'
        ' WHERE CAST(t.key AS text) = l.key', p_table)
    USING p_table_name;
END
$track$;

SELECT ledger_track_last_changes(to_regclass(quote_ident(d.sql_name)), d.table_name)
FROM ledger_declared_tables AS d
WHERE to_regclass(quote_ident(d.sql_name)) IS NOT NULL;

-- The links the commits before this file would have written: each key's first change in a
-- batch, after a change of the key that left a row.
INSERT INTO ledger_change_links (batch_id, position, seq, prev_batch, prev_position, prev_seq)
SELECT c.batch_id, c.position, c.seq, c.prev_batch, c.prev_position, c.prev_seq
FROM (
    SELECT l.batch_id, l.position, l.seq,
           lag(l.batch_id) OVER w AS prev_batch, lag(l.position) OVER w AS prev_position,
           lag(l.seq) OVER w AS prev_seq, lag(l.after) OVER w AS prev_after
    FROM ledger_change_log AS l
    WINDOW w AS (PARTITION BY l.table_name, l.key ORDER BY l.batch_id, l.position, l.seq)
) AS c
WHERE c.prev_batch < c.batch_id AND c.prev_after IS NOT NULL;

DROP TABLE ledger_audit_last_changes;
DROP TABLE ledger_audit_last_changes_through;
