-- Items used by more than one match: a statement entry in two matches, or a ledger change in
-- two matches of one source (a change may be matched once by each source that reconciles
-- its row; the source counted is the one its match names). And matched items filed under
-- another source than their match's: an entry of another source's statement, or a matched
-- change row labelled with another source than its match (which would let one change be
-- matched twice by one source). A finding names the source, the item, its matches and what
-- is wrong. Reads the matches, their items and the statement entries (written apart from
-- ledger_engine/store, which it checks).
WITH entry_matches AS (
    SELECT me.file_id, me.position, me.match_id, m.source AS match_source, e.source AS own_source
    FROM ledger_recon_matched_entries AS me
    LEFT JOIN ledger_recon_matches AS m ON m.match_id = me.match_id
    LEFT JOIN ledger_statement_entries AS e ON e.file_id = me.file_id AND e.position = me.position
),
change_matches AS (
    SELECT mc.batch_id, mc.position, mc.seq, mc.match_id, m.source AS match_source,
           mc.source AS row_source
    FROM ledger_recon_matched_changes AS mc
    LEFT JOIN ledger_recon_matches AS m ON m.match_id = mc.match_id
)
SELECT MIN(x.own_source) AS source,
       'statement entry (file ' || x.file_id || ', position ' || x.position || ')' AS item,
       string_agg('match ' || x.match_id, ', ' ORDER BY x.match_id) AS matches,
       'in ' || COUNT(*) || ' matches' AS problem
FROM entry_matches AS x
GROUP BY x.file_id, x.position
HAVING COUNT(*) > 1
UNION ALL
SELECT x.match_source,
       'ledger change (batch ' || x.batch_id || ', position ' || x.position
           || ', seq ' || x.seq || ')',
       string_agg('match ' || x.match_id, ', ' ORDER BY x.match_id),
       'in ' || COUNT(*) || ' matches of one source'
FROM change_matches AS x
GROUP BY x.match_source, x.batch_id, x.position, x.seq
HAVING COUNT(*) > 1
UNION ALL
SELECT x.match_source,
       'statement entry (file ' || x.file_id || ', position ' || x.position || ')',
       'match ' || x.match_id,
       'an entry of source ' || quote_nullable(x.own_source) || ' in a match of another source'
FROM entry_matches AS x
WHERE x.own_source IS DISTINCT FROM x.match_source
UNION ALL
SELECT x.match_source,
       'ledger change (batch ' || x.batch_id || ', position ' || x.position
           || ', seq ' || x.seq || ')',
       'match ' || x.match_id,
       'filed under source ' || quote_nullable(x.row_source) || ', its match''s is another'
FROM change_matches AS x
WHERE x.row_source IS DISTINCT FROM x.match_source
ORDER BY 1, 2, 4
