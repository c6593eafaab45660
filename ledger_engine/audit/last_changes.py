"""Where each key's last proven change is, for the batch audit (`sql/0013_batch_audit.sql`).

The batch suite's chain rule (`batch_expectations.written_keys_query`) needs, for each key
its scope writes, the key's change before the scope. The change log has no index that orders
a key's changes by batch (that index was most of a commit's cost), so the audits keep the
answer, valid through one batch, `through`, the last mark's `audited_through`:

- the *recent* batches, `recent_from` .. `through` (usually the one batch `through`), which
  the rule reads together with its scope: a key they wrote finds its last change there;
- a pointer per other key to its last change, the change log's primary key (batch, position,
  seq), which the rule follows with two primary-key probes.

`advance` moves both when a passing audit records its mark, in the same transaction: the
audit's last batch becomes the recent one, and the keys written in the batches before it (the
recent ones and the audit's other batches) but not in it get a pointer. That writes a
batch's keys less those the next batch writes again, never every key its scope wrote; it
reads the batches since `recent_from` once, by their primary-key range.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from ledger_engine.audit.session import BATCH_AUDIT_SETTINGS, set_locally

# The one row saying through which batch the pointers and the recent batches describe the
# change log; locked, so that two audits recording their marks at once advance them one after
# the other.
_THROUGH = text("SELECT through, recent_from FROM ledger_audit_last_changes_through FOR UPDATE")
# The keys written in batches :recent_from .. :last_batch - 1 and not in :last_batch, each with
# its last change among them (the greatest (batch, position, seq) of its entries): the entries
# of the earlier batches less those of keys the last batch wrote (a hash anti join: `_POINTING`
# turns merge joins off, which sorted both sides by the database's collation, 0.8 of 1.8 s on
# a batch of 10^5 transfers), then the few left sorted by key (bytewise, the cheapest order
# that groups a key's entries) and the last entry of each kept. Each range is read along the
# change log's primary key (`OFFSET 0` keeps it the only condition of that scan, as the batch
# suite's rules do). A pointer only ever moves forward.
_POINT = text(
    """INSERT INTO ledger_audit_last_changes AS h (table_name, key, batch_id, position, seq)
SELECT DISTINCT ON (c.table_name, c.key COLLATE "C")
       c.table_name, c.key, c.batch_id, c.position, c.seq
FROM (
    SELECT s.table_name, s.key, s.batch_id, s.position, s.seq
    FROM ledger_change_log AS s
    WHERE s.batch_id BETWEEN :recent_from AND :last_batch - 1
    OFFSET 0
) AS c
WHERE NOT EXISTS (
    SELECT FROM (
        SELECT n.table_name, n.key
        FROM ledger_change_log AS n
        WHERE n.batch_id BETWEEN :last_batch AND :last_batch
        OFFSET 0
    ) AS last_batch
    WHERE last_batch.table_name = c.table_name AND last_batch.key = c.key
)
ORDER BY c.table_name, c.key COLLATE "C", c.batch_id DESC, c.position DESC, c.seq DESC
ON CONFLICT (table_name, key) DO UPDATE
SET batch_id = EXCLUDED.batch_id, position = EXCLUDED.position, seq = EXCLUDED.seq
WHERE (h.batch_id, h.position, h.seq) < (EXCLUDED.batch_id, EXCLUDED.position, EXCLUDED.seq)"""
)
_POINTING = {**BATCH_AUDIT_SETTINGS, "enable_mergejoin": "off"}
_SET_THROUGH = text(
    "UPDATE ledger_audit_last_changes_through SET through = :through, recent_from = :through"
)


def advance(conn: Connection, proven_through: int) -> int:
    """Make batch `proven_through`, which a passing audit has just proven (and every batch
    before it, by the marks before), the recent one, and point the keys that only the batches
    before it wrote at their last change; call it in the transaction that records that
    audit's mark. Returns the batch they now reach."""
    through, recent_from = conn.execute(_THROUGH).one()
    if proven_through <= through:
        return through
    set_locally(conn, _POINTING)  # ranges read by bitmap scans, keys hashed in memory
    conn.execute(_POINT, {"recent_from": recent_from, "last_batch": proven_through})
    conn.execute(_SET_THROUGH, {"through": proven_through})
    return proven_through
