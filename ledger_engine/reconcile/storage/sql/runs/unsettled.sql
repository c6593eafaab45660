-- The pair of the run's own bookkeeping: of the items a run considered, how many are neither
-- matched nor in an open break (it must be none), and how many are in two (none either).
WITH entries AS (
    SELECT * FROM unnest(%(files)s::bigint[], %(positions)s::integer[]) AS i(file_id, position)
), changes AS (
    SELECT * FROM unnest(%(batches)s::bigint[], %(change_positions)s::integer[],
                         %(seqs)s::integer[]) AS i(batch_id, position, seq)
), entry_fates AS (
    SELECT (SELECT count(*) FROM ledger_recon_matched_entries AS m
             WHERE (m.file_id, m.position) = (i.file_id, i.position))
         + (SELECT count(*) FROM ledger_recon_breaks AS b
             WHERE b.status = 'open' AND (b.file_id, b.position) = (i.file_id, i.position))
           AS fates
    FROM entries AS i
), change_fates AS (
    SELECT (SELECT count(*) FROM ledger_recon_matched_changes AS m
             WHERE m.source = %(source)s
               AND (m.batch_id, m.position, m.seq) = (i.batch_id, i.position, i.seq))
         + (SELECT count(*) FROM ledger_recon_breaks AS b
             WHERE b.status = 'open' AND b.source = %(source)s
               AND (b.batch_id, b.change_position, b.change_seq) = (i.batch_id, i.position, i.seq))
           AS fates
    FROM changes AS i
)
SELECT count(*) FILTER (WHERE fates <> 1)
FROM (SELECT fates FROM entry_fates UNION ALL SELECT fates FROM change_fates) AS all_fates;
