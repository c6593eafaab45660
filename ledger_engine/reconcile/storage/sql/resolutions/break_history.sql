-- A break's history, oldest step first.
SELECT seq, action, who, note, run_id, match_id, request_id, at
FROM ledger_recon_break_history
WHERE break_id = %s
ORDER BY seq;
