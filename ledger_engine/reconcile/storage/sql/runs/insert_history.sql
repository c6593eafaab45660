-- The next step of a break's history.
INSERT INTO ledger_recon_break_history
    (break_id, seq, action, who, note, run_id, match_id, request_id)
SELECT %(break_id)s, coalesce(max(seq) + 1, 0), %(action)s, %(who)s, %(note)s, %(run_id)s,
       %(match_id)s, %(request_id)s
FROM ledger_recon_break_history
WHERE break_id = %(break_id)s;
