INSERT INTO ledger_recon_matches
    (run_id, source, kind, rule, account, amount_difference, date_difference_days, who, note)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING match_id;
